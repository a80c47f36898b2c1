"""AsyncResult: a handle on one task, by id, from any process."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pgtasks.engine.lookups import checked_task_id
from pgtasks.sysdb.records import Status
from pgtasks.task_info import TaskInfo

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


class AsyncResult:
    """The state and result of the task ``id``. Every property reads the database afresh.

    An id no task can have is refused here: TypeError for one that is not a string (None
    included), ValueError (ConfigurationError) for one with a NUL character or a lone
    surrogate, as at send."""

    def __init__(self, task_id: str, engine: Engine) -> None:
        self.id = checked_task_id(task_id)
        self._engine = engine

    def __repr__(self) -> str:
        return f"<AsyncResult {self.id}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AsyncResult) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def task_id(self) -> str:
        return self.id

    def record(self) -> TaskInfo | None:
        """The task (without its steps), or None if no task with this id exists (yet)."""
        found = self._engine.read_task(self.id)
        return None if found is None else TaskInfo.of(found)

    @property
    def status(self) -> str | None:
        """ENQUEUED, DELAYED, PENDING, SUCCESS, ERROR, CANCELLED,
        MAX_RECOVERY_ATTEMPTS_EXCEEDED, or None when no task has this id."""
        record = self.record()
        return record.status.value if record else None

    def ready(self) -> bool:
        """True once the task has finished (successfully or not)."""
        record = self.record()
        return record is not None and record.status.is_terminal

    def successful(self) -> bool:
        record = self.record()
        return record is not None and record.status is Status.SUCCESS

    def failed(self) -> bool:
        record = self.record()
        return record is not None and record.status.is_terminal and record.status is not Status.SUCCESS

    def get(self, timeout: float | None = None) -> Any:
        """Wait for the task to finish; return its value or raise its error.

        Raises :class:`~pgtasks.TaskTimeoutError` after ``timeout`` seconds,
        :class:`~pgtasks.TaskCancelled` for a cancelled task and
        :class:`~pgtasks.MaxRecoveryAttemptsExceeded` for a dead-lettered one. ``timeout``
        is a number of seconds or None (no limit): anything else raises TypeError, NaN
        ValueError.
        """
        return self._engine.result_of(self._engine.wait(self.id, timeout))

    async def get_async(self, timeout: float | None = None) -> Any:
        """:meth:`get` for async code: awaits the task's end without blocking the event loop,
        woken by the database's notification that it finished (PostgreSQL; SQLite polls)."""
        return self._engine.result_of(await self._engine.wait_async(self.id, timeout))

    async def ready_async(self) -> bool:
        """:meth:`ready` for async code (the read runs on a thread)."""
        return await asyncio.to_thread(self.ready)

    async def status_async(self) -> str | None:
        """:attr:`status` for async code (the read runs on a thread)."""
        return await asyncio.to_thread(lambda: self.status)
