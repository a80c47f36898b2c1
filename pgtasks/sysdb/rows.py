"""Conversion of database rows (mappings) into records, shared by both dialects."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from pgtasks.sysdb.records import (
    ClaimParams,
    EndReason,
    ExecutorInfo,
    QueueSettings,
    RecoveryReport,
    Status,
    StepRecord,
    StepWrite,
    TaskOwner,
    TaskRecord,
)

# The record's slots in field order, and the statuses by value: task_from_row fills a record
# through its slots, which costs half of the dataclass's __init__ (31 keyword arguments and as
# many object.__setattr__ calls of a frozen class: 7 against 13 µs a row). A claim turns
# hundreds of rows into records at once, on the thread that sends the next claim.
_TASK_SLOTS = tuple(getattr(TaskRecord, f.name).__set__ for f in fields(TaskRecord))
_STATUSES = {s.value: s for s in Status}


def task_from_row(row: Mapping[str, Any], claimed_at: float | None = None) -> TaskRecord:
    """Build a TaskRecord from a ``workflow_status`` row (``claimed_at``: see TaskRecord)."""
    get = row.get
    status = row["status"]
    end_reason = get("end_reason")
    values = (
        row["workflow_uuid"],  # task_id
        _STATUSES.get(status) or Status(status),
        row["name"],
        row["inputs"],
        row["serialization"],
        row["queue_name"],
        row["output"],
        row["error"],
        row["priority"],
        row["deduplication_id"],
        row["queue_partition_key"],  # partition_key
        row["delay_until_epoch_ms"],
        row["executor_id"],
        row["application_version"],
        row["recovery_attempts"],
        row["max_recovery_attempts"],
        row["created_at"],
        row["updated_at"],
        row["started_at_epoch_ms"],
        row["parent_workflow_id"],  # parent_task_id
        row["forked_from"],
        get("enqueue_seq") or 0,
        get("expires_at_epoch_ms"),
        get("claim_token"),
        get("has_steps"),
        get("retries") or 0,
        bool(get("has_links")),
        get("meta"),
        EndReason(end_reason) if end_reason else None,
        get("wait_for"),
        claimed_at,
    )
    record = object.__new__(TaskRecord)
    for fill, value in zip(_TASK_SLOTS, values, strict=True):
        fill(record, value)
    return record


# What a claim returns of each task it takes, in this order (claimed_record reads the row by
# position; both dialects' claim statements say RETURNING __claimed_columns__): the columns
# a run reads, nothing more (the whole row, 31 columns as dictionaries, cost the claiming
# thread CPU per task: docs/performance.md). A claimed record takes its status, executor, token
# and version from the claim itself, its updated_at from started_at (one timestamp), and
# leaves output, deduplication_id, partition_key, forked_from, end_reason and wait_for unset:
# nothing that runs a task reads them (the task's row has them: engine.admin.task).
CLAIMED_COLUMNS = (
    "workflow_uuid",
    "name",
    "inputs",
    "serialization",
    "queue_name",
    "error",  # a retried task's reason (self.request.delivery_info: redelivered)
    "priority",
    "delay_until_epoch_ms",
    "recovery_attempts",
    "max_recovery_attempts",
    "created_at",
    "started_at_epoch_ms",
    "parent_workflow_id",
    "enqueue_seq",
    "expires_at_epoch_ms",
    "retries",
    "has_links",
    "meta",
    "has_steps",
)


def claimed_columns(prefix: str, exprs: Mapping[str, str]) -> str:
    """The RETURNING list of a claim: :data:`CLAIMED_COLUMNS`, each ``prefix`` + its name or
    the dialect's expression for it (``exprs``)."""
    return ", ".join(exprs.get(c) or prefix + c for c in CLAIMED_COLUMNS)


# The order a claim picked its tasks in (RETURNING has none).
picking_order = operator.attrgetter("priority", "enqueue_seq")


def claimed_record(row: Sequence[Any], claim: ClaimParams, claimed_at: float) -> TaskRecord:
    """The TaskRecord of a row a claim returned (:data:`CLAIMED_COLUMNS`), filled through the
    record's slots (see _TASK_SLOTS)."""
    (
        task_id,
        name,
        inputs,
        serialization,
        queue_name,
        error,
        priority,
        delay_until,
        recovery_attempts,
        max_recovery_attempts,
        created_at,
        started_at,
        parent_task_id,
        enqueue_seq,
        expires_at,
        retries,
        has_links,
        meta,
        has_steps,
    ) = row
    values = (
        task_id,
        Status.PENDING,
        name,
        inputs,
        serialization,
        queue_name,
        None,  # output
        error,
        priority,
        None,  # deduplication_id
        None,  # partition_key
        delay_until,
        claim.executor_id,
        claim.application_version,
        recovery_attempts,
        max_recovery_attempts,
        created_at,
        started_at,  # updated_at: the claim sets both to its statement's time
        started_at,
        parent_task_id,
        None,  # forked_from
        enqueue_seq,
        expires_at,
        claim.claim_token,
        has_steps,
        retries,
        bool(has_links),
        meta,
        None,  # end_reason
        None,  # wait_for
        claimed_at,
    )
    record = object.__new__(TaskRecord)
    for fill, value in zip(_TASK_SLOTS, values, strict=True):
        fill(record, value)
    return record


def queue_from_row(row: Mapping[str, Any]) -> QueueSettings:
    """Build QueueSettings from a ``queues`` row."""
    return QueueSettings(
        name=row["name"],
        concurrency=row["concurrency"],
        worker_concurrency=row["worker_concurrency"],
        rate_limit_max=row["rate_limit_max"],
        rate_limit_period_sec=row["rate_limit_period_sec"],
        priority_enabled=bool(row["priority_enabled"]),
        partition_queue=bool(row["partition_queue"]),
        polling_interval_sec=row["polling_interval_sec"],
        result_expires_sec=row["result_expires_sec"],
        paused=bool(row["paused"]),
    )


def step_from_row(row: Mapping[str, Any]) -> StepRecord:
    """Build a StepRecord from an ``operation_outputs`` row."""
    return StepRecord(
        task_id=row["workflow_uuid"],
        function_id=row["function_id"],
        function_name=row["function_name"],
        output=row["output"],
        error=row["error"],
        serialization=row["serialization"],
        started_at_epoch_ms=row["started_at_epoch_ms"],
        completed_at_epoch_ms=row["completed_at_epoch_ms"],
        executor_id=row["executor_id"],
        claim_token=row.get("claim_token"),
    )


def executor_from_row(row: Mapping[str, Any]) -> ExecutorInfo:
    """Build an ExecutorInfo from an ``executors`` row."""
    return ExecutorInfo(
        executor_id=row["executor_id"],
        hostname=row["hostname"],
        pid=row["pid"],
        application_version=row["application_version"],
        queues=tuple(q for q in row["queues"].split(",") if q),
        started_at=row["started_at"],
        last_heartbeat=row["last_heartbeat"],
        lease_ms=row["lease_ms"],
        details=row.get("details"),
    )


def own_step_row(owner: Mapping[str, Any], step: StepRecord) -> bool:
    """Whether an existing checkpoint row was written by this very run (a retry whose COMMIT
    reply was lost finds its own row): same claim token, or same executor without tokens."""
    if step.claim_token is not None:
        return bool(owner["claim_token"] == step.claim_token)
    return bool(owner["executor_id"] == step.executor_id)


def written_step(task_status: str) -> StepWrite:
    """The result of a checkpoint this call inserted, given the task's status at the insert."""
    return StepWrite.RECORDED if task_status == Status.PENDING else StepWrite.RECORDED_STOPPED


def runs_here(row: Mapping[str, Any] | None, owner: TaskOwner) -> bool:
    """Whether the task row read for ``owner`` (None: no such task) is PENDING on its executor
    under its claim token."""
    return (
        row is not None
        and row["status"] == Status.PENDING
        and row["executor_id"] == owner.executor_id
        and (owner.claim_token is None or row["claim_token"] == owner.claim_token)
    )


def existing_step(owner: Mapping[str, Any] | None, step: StepRecord) -> StepWrite:
    """The result of a checkpoint whose insert wrote nothing, from the ``step_owner`` row."""
    if owner is None:
        return StepWrite.NOT_OWNER
    if not own_step_row(owner, step):
        return StepWrite.CONFLICT
    # Our own row, from a try whose COMMIT reply was lost: go on only if the task still runs here.
    running_here = (
        owner["task_status"] == Status.PENDING
        and owner["task_executor"] == step.executor_id
        and (step.claim_token is None or owner["task_token"] == step.claim_token)
    )
    return StepWrite.RECORDED if running_here else StepWrite.RECORDED_STOPPED


def recovery_report(rows: Sequence[Mapping[str, Any]]) -> RecoveryReport:
    """Split the (workflow_uuid, status) rows of a recovery pass into requeued and dead."""
    report = RecoveryReport()
    for row in rows:
        if row["status"] == Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED:
            report.dead_lettered.append(row["workflow_uuid"])
        else:
            report.requeued.append(row["workflow_uuid"])
    return report


def step_args(step: StepRecord) -> dict[str, Any]:
    """The parameters of the ``step_record`` statement for ``step``."""
    return {
        "task_id": step.task_id,
        "function_id": step.function_id,
        "function_name": step.function_name,
        "output": step.output,
        "error": step.error,
        "serialization": step.serialization,
        "started_at": step.started_at_epoch_ms,
        "executor_id": step.executor_id,
        "claim_token": step.claim_token,
    }
