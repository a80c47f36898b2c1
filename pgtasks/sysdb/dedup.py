"""Sorting out, after an INSERT ... ON CONFLICT DO NOTHING, which tasks were kept and why."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from itertools import repeat
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
    if len(inserted) == len(tasks):  # the common case: every task is new
        return all_inserted(tasks)
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


# An EnqueueResult from its three fields without the named tuple's own __new__ (a Python
# function, three times slower: one result is built per task sent).
_result = partial(tuple.__new__, EnqueueResult)


def all_inserted(tasks: list[NewTask]) -> list[EnqueueResult]:
    """The results of ``tasks`` when every one of them was inserted."""
    return list(map(_result, zip([task.task_id for task in tasks], repeat(True), repeat(None))))


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


def enqueue_columns(tasks: list[NewTask]) -> dict[str, Any]:
    """The tasks as the bulk INSERT's parameters: per field of :class:`NewTask`, the array of
    its values, or (``<field>_all``) the one value every task has, with a NULL array that
    ``unnest`` pads with NULLs. A producer's call mostly sends one task name with one set of
    options, so most columns are one value, not an array adapted element by element. The ids
    are always an array: they give ``unnest`` its row count."""
    params: dict[str, Any] = {}
    for field, values in zip(NewTask._fields, zip(*tasks, strict=True), strict=True):
        first = values[0]
        if field != "task_id" and values.count(first) == len(values):
            params[field], params[field + "_all"] = None, first
        else:
            params[field], params[field + "_all"] = list(values), None
    return params


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
