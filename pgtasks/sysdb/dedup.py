"""Sorting out, after an INSERT ... ON CONFLICT DO NOTHING, which tasks were kept and why."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pgtasks.sysdb.errors import DuplicatesRefused
from pgtasks.sysdb.records import HOLDER_FINISHED, EnqueueResult, NewTask


def enqueue_results(
    tasks: list[NewTask], inserted: set[str], existing: Iterable[Mapping[str, Any]]
) -> list[EnqueueResult]:
    """One result per task: inserted, an existing task with that id, or a duplicate.

    ``existing`` holds (workflow_uuid, queue_name, deduplication_id) of the rows that were
    already there for the tasks that were not inserted.
    """
    ids = set()
    by_dedup: dict[tuple[str, str], str] = {}
    for row in existing:
        ids.add(row["workflow_uuid"])
        if row["deduplication_id"] is not None:
            by_dedup[(row["queue_name"], row["deduplication_id"])] = row["workflow_uuid"]
    results = []
    for task in tasks:
        if task.task_id in inserted:
            results.append(EnqueueResult(task.task_id, inserted=True))
        elif task.task_id in ids:
            results.append(EnqueueResult(task.task_id, inserted=False))
        else:
            # The holder may have finished between the INSERT and this lookup: report the
            # deduplication id itself so the caller still sees a refusal, never a silent drop.
            holder = by_dedup.get((task.queue_name, task.deduplication_id or ""))
            results.append(
                EnqueueResult(task.task_id, inserted=False, duplicate_of=holder or HOLDER_FINISHED)
            )
    return results


def may_refuse(tasks: list[NewTask], all_or_nothing: bool) -> bool:
    """Whether an all-or-nothing enqueue of ``tasks`` needs a transaction of its own: only a
    batch of several tasks, one of them with a deduplication id, can be refused in part."""
    return all_or_nothing and len(tasks) > 1 and any(t.deduplication_id is not None for t in tasks)


def refuse_duplicates(results: list[EnqueueResult]) -> list[EnqueueResult]:
    """``results``, or DuplicatesRefused (raised inside the enqueue's transaction, which then
    rolls back) if a deduplication id of the batch is held by another task."""
    if any(r.duplicate_of is not None for r in results):
        raise DuplicatesRefused(results)
    return results


def enqueue_columns(tasks: list[NewTask]) -> dict[str, list[Any] | None]:
    """The tasks as column arrays, the shape of the bulk INSERT's parameters. A column that no
    task sets is sent as NULL: ``unnest`` pads it with NULLs (what it holds for every row),
    and the array need not be built nor adapted element by element."""
    return {
        "ids": [t.task_id for t in tasks],
        "names": [t.name for t in tasks],
        "inputs": [t.inputs for t in tasks],
        "serializations": [t.serialization for t in tasks],
        "queues": [t.queue_name for t in tasks],
        "priorities": [t.priority for t in tasks],
        "dedups": _unless_unset([t.deduplication_id for t in tasks]),
        "partition_keys": _unless_unset([t.partition_key for t in tasks]),
        "delays_abs": _unless_unset([t.delay_until_epoch_ms for t in tasks]),
        # A NULL relative delay reads as none, like 0 (the statement's COALESCE).
        "delays_rel": _unless_unset([t.delay_ms for t in tasks], 0),
        "versions": _unless_unset([t.application_version for t in tasks]),
        "max_attempts": [t.max_recovery_attempts for t in tasks],
        "parents": _unless_unset([t.parent_task_id for t in tasks]),
        "expires": _unless_unset([t.expires_at_epoch_ms for t in tasks]),
        "expires_rel": _unless_unset([t.expires_in_ms for t in tasks]),
        "metas": _unless_unset([t.meta for t in tasks]),
        "retries": [t.retries for t in tasks],
    }


def _unless_unset(values: list[Any], unset_as: Any = None) -> list[Any] | None:
    """``values`` (None ones as ``unset_as``), or None when every one is None."""
    if all(v is None for v in values):
        return None
    return values if unset_as is None else [unset_as if v is None else v for v in values]


def staging_rows(tasks: list[NewTask]) -> Iterator[tuple[Any, ...]]:
    """The tasks as rows of the enqueue staging table (its columns' order; ``ord`` numbers
    them from 1, the order they are inserted in)."""
    for position, t in enumerate(tasks, 1):
        yield (
            t.task_id, t.name, t.inputs, t.serialization, t.queue_name, t.priority,
            t.deduplication_id, t.partition_key, t.delay_until_epoch_ms, t.delay_ms or 0,
            t.application_version, t.max_recovery_attempts, t.parent_task_id,
            t.expires_at_epoch_ms, t.expires_in_ms, t.meta, t.retries, position,
        )  # fmt: skip


def single_task_params(task: NewTask) -> dict[str, Any]:
    """One task as named parameters, the shape of a single-row INSERT."""
    return {
        "id": task.task_id,
        "name": task.name,
        "inputs": task.inputs,
        "serialization": task.serialization,
        "queue": task.queue_name,
        "priority": task.priority,
        "dedup": task.deduplication_id,
        "partition_key": task.partition_key,
        "delay_abs": task.delay_until_epoch_ms,
        "delay_rel": task.delay_ms or 0,
        "version": task.application_version,
        "max_attempts": task.max_recovery_attempts,
        "parent": task.parent_task_id,
        "expires": task.expires_at_epoch_ms,
        "expires_rel": task.expires_in_ms,
        "meta": task.meta,
        "retries": task.retries,
    }
