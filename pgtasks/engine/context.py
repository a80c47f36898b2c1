"""The context of the task running on this thread: its id, owner and recorded steps."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pgtasks.sysdb.records import StepRecord, TaskRecord

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


@dataclass
class TaskContext:
    """Mutable state of one execution of one task."""

    record: TaskRecord
    executor_id: str
    engine: Engine
    steps: dict[int, StepRecord] = field(default_factory=dict)
    next_function_id: int = 1
    # time.monotonic() of the last write that proved the task still runs here, or None.
    confirmed_at: float | None = None

    @property
    def task_id(self) -> str:
        return self.record.task_id

    def take_function_id(self) -> int:
        """The position of the next step (or child task) in this task's history."""
        function_id = self.next_function_id
        self.next_function_id += 1
        return function_id


_current: contextvars.ContextVar[TaskContext | None] = contextvars.ContextVar(
    "pgtasks_current_task", default=None
)


def current_task() -> TaskContext | None:
    """The context of the task executing on this thread, or None outside a task."""
    return _current.get()


def enter(ctx: TaskContext) -> contextvars.Token[TaskContext | None]:
    return _current.set(ctx)


def leave(token: contextvars.Token[TaskContext | None]) -> None:
    _current.reset(token)
