"""The public records of a task and its recorded steps, as the management API, the CLI, the
dashboard and ``AsyncResult.record()`` show them, and a page of tasks: storage internals
(claim tokens, link flags, queue positions, sender metadata) stay in the engine."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pgtasks.engine.failures import error_summary
from pgtasks.engine.redaction import sender_shown
from pgtasks.sysdb.records import EndReason, Status, StepRecord, TaskRecord


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One recorded step of a task: its checkpoint (``output`` or ``error``, serialized)."""

    function_id: int
    function_name: str
    output: str | None
    error: str | None
    serialization: str
    started_at_epoch_ms: int | None
    completed_at_epoch_ms: int | None
    executor_id: str | None


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task as the management API shows it: its state, inputs and outcome (serialized as
    stored), timing and attempts. ``steps`` holds its recorded steps when read with
    ``get_task``, and is None in ``list_tasks`` results (steps are not loaded there).
    ``executor_id`` names the worker running (or last running) the task. ``end_reason`` says
    why a task ended without an outcome of its own (EXPIRED, CANCELLED, DEPENDENCY_FAILED,
    NOT_NEEDED), else None. ``wait_for`` says what, besides its time, wakes a task waiting
    durably (``message:<id>:<topic>``, ``event:<id>:<key>``; docs/waiting.md).
    ``parent_task_id`` is the task that sent it or whose outcome released it (a chain's
    previous task); ``root_task_id`` the first task of its workflow (its sender's record of
    it, else its parent, else itself)."""

    task_id: str
    status: Status
    name: str
    queue_name: str
    inputs: str
    serialization: str
    output: str | None
    error: str | None
    priority: int
    deduplication_id: str | None
    partition_key: str | None
    delay_until_epoch_ms: int | None
    executor_id: str | None
    application_version: str | None
    recovery_attempts: int
    max_recovery_attempts: int
    retries: int
    created_at: int
    updated_at: int
    started_at_epoch_ms: int | None
    expires_at_epoch_ms: int | None
    parent_task_id: str | None
    forked_from: str | None
    end_reason: EndReason | None = None
    wait_for: str | None = None
    steps: tuple[StepInfo, ...] | None = None
    root_task_id: str | None = None
    # What its sender asked logs and monitoring to show for its args and kwargs (Celery's
    # argsrepr/kwargsrepr), each None when not given.
    shown_arguments: tuple[str | None, str | None] = (None, None)

    @property
    def error_summary(self) -> str:
        """The error's ``Type: message`` (empty when the task has no error)."""
        return error_summary(self.error)

    @classmethod
    def of(cls, record: TaskRecord, steps: list[StepRecord] | None = None) -> TaskInfo:
        """The public view of a stored task (and its steps)."""
        return cls(
            task_id=record.task_id,
            status=record.status,
            name=record.name,
            queue_name=record.queue_name,
            inputs=record.inputs,
            serialization=record.serialization,
            output=record.output,
            error=record.error,
            priority=record.priority,
            deduplication_id=record.deduplication_id,
            partition_key=record.partition_key,
            delay_until_epoch_ms=record.delay_until_epoch_ms,
            executor_id=record.executor_id,
            application_version=record.application_version,
            recovery_attempts=record.recovery_attempts,
            max_recovery_attempts=record.max_recovery_attempts,
            retries=record.retries,
            created_at=record.created_at,
            updated_at=record.updated_at,
            started_at_epoch_ms=record.started_at_epoch_ms,
            expires_at_epoch_ms=record.expires_at_epoch_ms,
            parent_task_id=record.parent_task_id,
            forked_from=record.forked_from,
            end_reason=record.end_reason,
            wait_for=record.wait_for,
            steps=None if steps is None else tuple(_step_info(s) for s in steps),
            root_task_id=_root_of(record),
            shown_arguments=sender_shown(record.meta),
        )


@dataclass(frozen=True, slots=True)
class TaskPage:
    """One page of tasks, newest first (``task_page``), and ``next_page``: the cursor of the
    page after it (pass it as ``after=``), None on the last page."""

    tasks: tuple[TaskInfo, ...]
    next_page: str | None


def _root_of(record: TaskRecord) -> str:
    """The root its sender stored (``meta``'s ``root_id``), else its parent, else itself."""
    root = None
    if record.meta:
        try:
            root = json.loads(record.meta).get("root_id")
        except (ValueError, AttributeError):
            root = None
    return str(root or record.parent_task_id or record.task_id)


def _step_info(step: StepRecord) -> StepInfo:
    return StepInfo(
        function_id=step.function_id,
        function_name=step.function_name,
        output=step.output,
        error=step.error,
        serialization=step.serialization,
        started_at_epoch_ms=step.started_at_epoch_ms,
        completed_at_epoch_ms=step.completed_at_epoch_ms,
        executor_id=step.executor_id,
    )
