"""Management of tasks and queues from code: list, inspect, cancel, resume and fork tasks;
pause and resume queues."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from pgtasks.engine.errors import ConfigurationError
from pgtasks.result import AsyncResult
from pgtasks.sysdb.records import ForkParams, ListTasksParams, Status
from pgtasks.task_info import StepInfo, TaskInfo

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine

__all__ = ["StepInfo", "TaskInfo", "TaskManagement"]


def _status(value: str | Status) -> Status:
    try:
        return Status(str(value).upper())
    except ValueError:
        known = ", ".join(s.value for s in Status)
        raise ConfigurationError(f"unknown status {value!r}; one of {known}") from None


def _epoch_ms(value: dt.datetime | None) -> int | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return round(value.timestamp() * 1000)


class TaskManagement:
    """What App and Client share: results by id, task management, closing. Needs
    ``self.engine``."""

    engine: Engine

    def list_tasks(
        self,
        status: str | Status | list[str | Status] | None = None,
        name: str | None = None,
        queue: str | None = None,
        created_after: dt.datetime | None = None,
        created_before: dt.datetime | None = None,
        limit: int = 100,
        newest_first: bool = True,
    ) -> list[TaskInfo]:
        """Tasks filtered by status, name, queue and creation time (naive datetimes are UTC)."""
        statuses = [] if status is None else [status] if isinstance(status, (str, Status)) else status
        if not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a positive integer, not {limit!r}")
        params = ListTasksParams(
            status=tuple(_status(s) for s in statuses),
            name=name,
            queue_name=queue,
            created_after_epoch_ms=_epoch_ms(created_after),
            created_before_epoch_ms=_epoch_ms(created_before),
            limit=limit,
            newest_first=newest_first,
        )
        return [TaskInfo.of(record) for record in self.engine.admin.tasks(params)]

    def get_task(self, task_id: str) -> TaskInfo | None:
        """One task and its recorded steps, or None."""
        admin = self.engine.admin
        record = admin.task(task_id)
        if record is None:
            return None
        return TaskInfo.of(record, admin.steps(task_id))

    def cancel_task(self, task_id: str) -> bool:
        """Cancel a task that has not finished. A waiting task never starts; a running one
        stops at its next step. Returns False if the task had already finished."""
        return self.engine.admin.cancel(task_id)

    def resume_task(self, task_id: str) -> bool:
        """Re-enqueue a cancelled or dead-lettered task; it continues from its last recorded
        step with a fresh attempt count, on any worker version. False if not resumable."""
        return self.engine.admin.resume(task_id)

    def pause_queue(self, name: str) -> None:
        """Stop every worker from claiming tasks of queue ``name`` (tasks already running go
        on; new ones wait, and can still be sent) until :meth:`resume_queue`. Holds across
        worker restarts and deploys."""
        self.engine.admin.set_queue_paused(name, True)

    def resume_queue(self, name: str) -> None:
        """Let workers claim from queue ``name`` again; idle workers wake at once."""
        self.engine.admin.set_queue_paused(name, False)

    def AsyncResult(self, task_id: str) -> AsyncResult:
        """The handle of any task by id."""
        return AsyncResult(task_id, self.engine)

    def close(self) -> None:
        """Close database connections (they reopen on next use)."""
        self.engine.close()

    def fork_task(
        self, task_id: str, start_step: int = 1, new_task_id: str | None = None, queue: str | None = None
    ) -> str:
        """Start a new task with the inputs of ``task_id`` that reuses its recorded steps
        before ``start_step`` (1-based) and runs the rest on the current code."""
        if isinstance(start_step, bool) or not isinstance(start_step, int) or start_step < 1:
            raise ConfigurationError(f"start_step is 1-based: an integer >= 1, not {start_step!r}")
        new_id = new_task_id or str(uuid.uuid4())
        if self.engine.admin.task(new_id) is not None:
            raise ConfigurationError(f"a task with id {new_id!r} exists already")
        try:
            forked = self.engine.admin.fork(ForkParams(task_id, new_id, start_step, queue))
        except KeyError:
            raise ConfigurationError(f"no task with id {task_id!r} to fork") from None
        return forked.task_id
