"""The context of the task running on this thread: the engine's mutable one (its id, owner,
recorded steps and step counter) and the read-only view handed to users
(``pgtasks.current_task()``)."""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pgtasks.sysdb.records import StepRecord, TaskRecord

if TYPE_CHECKING:
    from pgtasks.engine.runtime import Runtime


@dataclass
class TaskContext:
    """Mutable state of one execution of one task; the engine's own."""

    record: TaskRecord
    executor_id: str
    engine: Runtime
    steps: dict[int, StepRecord] = field(default_factory=dict)
    next_function_id: int = 1
    # time.monotonic() of the last write that proved the task still runs here, or None.
    confirmed_at: float | None = None
    # True on the asyncio pool: the event loop is shared with other tasks, so an async step
    # must not block it (its database calls go to threads and its checkpoint is awaited).
    shared_loop: bool = False
    # The process the task runs in: a process the task forked (multiprocessing's fork start
    # method, a daemon) shares this context but must not write the task's history.
    pid: int = field(default_factory=os.getpid)

    @property
    def task_id(self) -> str:
        return self.record.task_id

    def take_function_id(self) -> int:
        """The position of the next step (or child task) in this task's history."""
        function_id = self.next_function_id
        self.next_function_id += 1
        return function_id

    def view(self) -> CurrentTask:
        """The read-only view of this execution handed to user code."""
        record = self.record
        return CurrentTask(
            task_id=record.task_id,
            name=record.name,
            queue_name=record.queue_name,
            retries=record.retries,
            recovery_attempts=record.recovery_attempts,
            max_recovery_attempts=record.max_recovery_attempts,
            priority=record.priority,
            parent_task_id=record.parent_task_id,
            executor_id=self.executor_id,
        )


@dataclass(frozen=True, slots=True)
class CurrentTask:
    """The task running on this thread, as user code sees it.

    ``retries``: how many times the task asked to run again (``RetryRequested``).
    ``recovery_attempts``: how many times it was started (a recovered crash counts one).
    ``executor_id``: the worker running it."""

    task_id: str
    name: str
    queue_name: str
    retries: int
    recovery_attempts: int
    max_recovery_attempts: int
    priority: int
    parent_task_id: str | None
    executor_id: str


_current: contextvars.ContextVar[TaskContext | None] = contextvars.ContextVar(
    "pgtasks_current_task", default=None
)


def running_context() -> TaskContext | None:
    """The engine's context of the task executing on this thread, or None outside a task."""
    return _current.get()


def current_task() -> CurrentTask | None:
    """The task executing on this thread (a read-only view), or None outside a task."""
    ctx = _current.get()
    return None if ctx is None else ctx.view()


def enter(ctx: TaskContext) -> contextvars.Token[TaskContext | None]:
    return _current.set(ctx)


def leave(token: contextvars.Token[TaskContext | None]) -> None:
    _current.reset(token)
