"""``celery.result``: AsyncResult (a task in the database, by id) and EagerResult (a task run
in this process). States are Celery's, mapped from pgtasks statuses by
:func:`pgtasks.compat.states.celery_state`.

Unlike Celery, an id that no task has is distinguishable from a waiting task: both read
PENDING (as in Celery), but ``exists`` is False for the unknown id and ``get(timeout=...)``
says no such task exists.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pgtasks.compat import states
from pgtasks.compat.current import current_app
from pgtasks.compat.exceptions import IncompleteStream, TaskRevokedError, TimeoutError, celery_exception
from pgtasks.compat.request import allow_join_result, denied_join_result, inside_worker_task
from pgtasks.compat.result_extras import ResultExtras, ResultSetExtras
from pgtasks.engine.errors import DatabaseUnavailable, MaxRecoveryAttemptsExceeded, TaskTimeoutError
from pgtasks.engine.events import task_state
from pgtasks.engine.failures import decode_exception
from pgtasks.sysdb.records import Status, TaskRecord

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery

__all__ = [
    "AsyncResult",
    "EagerResult",
    "GroupResult",
    "ResultBase",
    "ResultSet",
    "allow_join_result",
    "denied_join_result",
    "result_from_tuple",
]

FIRST_POLL = 0.005
SYNC_SUBTASK_MESSAGE = (
    "Never call result.get() within a task!\n"
    "See https://docs.celeryq.dev/en/latest/userguide/tasks.html#avoid-launching-synchronous-subtasks"
)


class ResultBase:
    """Base class for results."""

    parent: Any = None
    # Sent with ignore_result: Celery stores nothing, and get() returns None at once.
    ignored: bool = False


class AsyncResult(ResultExtras, ResultBase):
    """The state and result of the task ``id``; every read goes to the database."""

    def __init__(
        self,
        id: str,
        backend: Any = None,
        task_name: str | None = None,
        app: Celery | None = None,
        parent: Any = None,
    ) -> None:
        if id is None:
            raise ValueError(f"AsyncResult expects a task id, not {id!r}")
        self.id = str(id)
        self.app = app if app is not None else current_app()
        self._backend = backend
        self._name = task_name
        self._parent: AsyncResult | GroupResult | None = parent

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.id}>"

    def __str__(self) -> str:
        return self.id

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncResult):
            return other.id == self.id
        if isinstance(other, str):
            return other == self.id
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def task_id(self) -> str:
        return self.id

    @property
    def backend(self) -> Any:
        """The app's result backend (``app.backend``), or the one given."""
        given = getattr(self, "_backend", None)
        if given is not None:
            return given
        return getattr(self.app, "backend", None) if self.app is not None else None

    @backend.setter
    def backend(self, value: Any) -> None:
        self._backend = value

    def record(self) -> TaskRecord | None:
        """The task's row, or None when no task has this id (from the ``read_url`` replica
        when there is one: see docs/production.md)."""
        return self.app.engine.read_task(self.id)

    @property
    def exists(self) -> bool:
        """False when no task has this id (Celery cannot tell; pgtasks can)."""
        return self.record() is not None

    # -- state ---------------------------------------------------------------------------
    def _track_started(self, name: str | None) -> bool:
        task = self.app.tasks.get(name) if name else None
        if task is not None and task.track_started:
            return True
        return bool(self.app.conf.task_track_started)

    def _state_of(self, record: TaskRecord | None) -> str:
        if record is None:
            return states.PENDING
        custom = self._custom(record)
        if custom is not None:
            return custom[0]
        return states.celery_state(record.status, record.retries, self._track_started(record.name))

    def _custom(self, record: TaskRecord) -> tuple[str, Any] | None:
        """The state a running task set with ``update_state`` (read only while it runs)."""
        if record.status not in (Status.PENDING, Status.WAITING):
            return None  # WAITING: a state stored by hand (app.backend.mark_as_started)
        return task_state(self.app.engine, record.task_id)

    @property
    def state(self) -> str:
        """PENDING, STARTED, RETRY, SUCCESS, FAILURE or REVOKED."""
        return self._state_of(self.record())

    status = state

    def _value_of(self, record: TaskRecord | None) -> Any:
        if record is None:
            return None
        custom = self._custom(record)
        if custom is not None:
            return custom[1]
        state = self._state_of(record)
        if state == states.SUCCESS:
            return self.app.engine.result_of(record)
        if state == states.REVOKED:
            expired = bool(record.error and "TaskExpired" in record.error)
            return TaskRevokedError("expired" if expired else "revoked")
        if record.status is Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED:
            try:
                self.app.engine.result_of(record)
            except MaxRecoveryAttemptsExceeded as exc:
                return exc
        if record.error and state in (states.FAILURE, states.RETRY):
            return celery_exception(decode_exception(record.error, self.app.engine.trusted_modules()))
        return None

    @property
    def result(self) -> Any:
        """The return value, or the exception when the task failed (or is waiting to retry)."""
        return self._value_of(self.record())

    info = result

    @property
    def traceback(self) -> str | None:
        """The formatted traceback of a failed task."""
        record = self.record()
        if record is None or not record.error or self._state_of(record) not in states.EXCEPTION_STATES:
            return None
        try:
            return str(json.loads(record.error).get("traceback") or "") or None
        except (ValueError, AttributeError):
            return None

    def ready(self) -> bool:
        """True once the task succeeded, failed or was revoked."""
        return self.state in states.READY_STATES

    def successful(self) -> bool:
        return self.state == states.SUCCESS

    def failed(self) -> bool:
        return self.state == states.FAILURE

    # -- waiting -------------------------------------------------------------------------
    def get(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        no_ack: bool = True,
        follow_parents: bool = True,
        callback: Any = None,
        on_message: Any = None,
        on_interval: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Wait for the task; return its value, or raise its exception (``propagate``).

        Raises :class:`~pgtasks.compat.exceptions.TimeoutError` after ``timeout`` seconds and
        RuntimeError when called inside a task run by a worker (as Celery does).
        """
        if disable_sync_subtasks and inside_worker_task():
            raise RuntimeError(SYNC_SUBTASK_MESSAGE)
        if self.ignored:
            return None
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = min(FIRST_POLL, interval)
        while True:
            try:
                record = self.record()
            except DatabaseUnavailable:
                record = None
            if record is not None and self._state_of(record) in states.READY_STATES:
                value = self._value_of(record)
                if callback is not None:
                    callback(self.id, value)
                if propagate and self._state_of(record) in states.PROPAGATE_STATES:
                    raise value
                return value
            if on_interval is not None:
                on_interval()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                if record is None:
                    raise TimeoutError(f"The operation timed out (no task with id {self.id!r} exists).")
                raise TimeoutError("The operation timed out.")
            time.sleep(pause if remaining is None else min(pause, remaining))
            pause = min(pause * 2, interval)

    wait = get

    async def get_async(
        self, timeout: float | None = None, propagate: bool = True, callback: Any = None, **kwargs: Any
    ) -> Any:
        """:meth:`get` for async code (pgtasks' ``_async`` twin; Celery has none): awaits the
        task without blocking the event loop, woken by the database's notification that it
        finished, and may be awaited inside a running task. Raises TimeoutError as get does."""
        if self.ignored:
            return None
        try:
            await self.app.engine.wait_async(self.id, timeout)
        except TaskTimeoutError as exc:
            if "no task with id" in str(exc):
                raise TimeoutError(f"The operation timed out (no task with id {self.id!r} exists).") from None
            raise TimeoutError("The operation timed out.") from None
        read = functools.partial(self.get, propagate=propagate, callback=callback)
        return await asyncio.to_thread(read, timeout=0, disable_sync_subtasks=False)

    wait_async = get_async

    async def ready_async(self) -> bool:
        """:meth:`ready` for async code (the read runs on a thread)."""
        return await asyncio.to_thread(self.ready)

    async def state_async(self) -> str:
        """:attr:`state` for async code (the read runs on a thread)."""
        return await asyncio.to_thread(lambda: self.state)

    # -- details -------------------------------------------------------------------------
    @property
    def name(self) -> str | None:
        record = self.record()
        return record.name if record is not None else self._name

    @property
    def args(self) -> tuple[Any, ...] | None:
        record = self.record()
        if record is None:
            return None
        args, _ = self.app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
        return tuple(args)

    @property
    def kwargs(self) -> dict[str, Any] | None:
        record = self.record()
        if record is None:
            return None
        _, kwargs = self.app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
        return kwargs

    @property
    def retries(self) -> int | None:
        record = self.record()
        return record.retries if record is not None else None

    @property
    def queue(self) -> str | None:
        record = self.record()
        return record.queue_name if record is not None else None

    @property
    def worker(self) -> str | None:
        record = self.record()
        return record.executor_id if record is not None else None

    @property
    def date_done(self) -> dt.datetime | None:
        """When the task finished (UTC), or None while it has not."""
        record = self.record()
        if record is None or not record.status.is_terminal:
            return None
        return dt.datetime.fromtimestamp(record.updated_at / 1000, dt.timezone.utc)

    @property
    def parent(self) -> AsyncResult | GroupResult | None:
        if self._parent is not None:
            return self._parent
        record = self.record()
        if record is None or record.parent_task_id is None:
            return None
        return AsyncResult(record.parent_task_id, app=self.app)

    @parent.setter
    def parent(self, value: Any) -> None:
        self._parent = value

    @property
    def children(self) -> list[AsyncResult] | None:
        """The tasks this one sent and those waiting for its result (None when there are none,
        as Celery reports a task with nothing recorded)."""
        found = self.app.engine.admin.children(self.id)
        return [AsyncResult(child, app=self.app) for child in found] or None

    # -- actions -------------------------------------------------------------------------
    def revoke(
        self,
        connection: Any = None,
        terminate: bool = False,
        signal: Any = None,
        wait: bool = False,
        timeout: float | None = None,
    ) -> None:
        """Revoke the task: if it has not started it never will, on any worker."""
        self.app.control.revoke(self.id, terminate=terminate, signal=signal)

    def forget(self) -> None:
        """Delete the stored result now, as Celery does: a finished task's row, steps and
        events go (it reads as PENDING afterwards). An unfinished task, or one a waiting
        canvas still needs, is kept."""
        self.app.engine.admin.forget(self.id)

    def as_tuple(self) -> tuple[Any, ...]:
        parent = self._parent
        return (self.id, parent.as_tuple() if parent is not None else None), None

    def iterdeps(self, intermediate: bool = False) -> Iterator[tuple[Any, AsyncResult]]:
        """``(parent, result)`` for this result and, breadth first, every child of a ready
        one; IncompleteStream at an unready one unless ``intermediate``."""
        stack: deque[tuple[Any, AsyncResult]] = deque([(None, self)])
        while stack:
            parent, node = stack.popleft()
            yield parent, node
            if node.ready():
                stack.extend((node, child) for child in node.children or [])
            elif not intermediate:
                raise IncompleteStream()

    def collect(self, intermediate: bool = False, **kwargs: Any) -> Iterator[tuple[AsyncResult, Any]]:
        """``(result, value)`` for this result and its descendants (see :meth:`iterdeps`)."""
        for _, result in self.iterdeps(intermediate=intermediate):
            yield result, result.get(**kwargs)

    def then(self, callback: Any, on_error: Any = None, weak: bool = False) -> Any:
        raise NotImplementedError("AsyncResult.then is not supported by pgtasks.compat")


class EagerResult(AsyncResult):
    """The result of a task run in this process by ``apply()`` or eager mode."""

    def __init__(
        self,
        id: str,
        ret_value: Any,
        state: str,
        traceback: str | None = None,
        name: str | None = None,
        app: Celery | None = None,
        args: Any = None,
        kwargs: Any = None,
        retries: int = 0,
    ) -> None:
        self.id = id
        self._result = ret_value
        self._state = state
        self._traceback = traceback
        self._name = name
        self._parent = None
        self.app = app  # type: ignore[assignment]
        self._args, self._kwargs, self._retries = args, kwargs, retries

    def record(self) -> TaskRecord | None:
        return None

    @property
    def exists(self) -> bool:
        return True

    @property
    def state(self) -> str:
        return self._state

    status = state

    @property
    def result(self) -> Any:
        return self._result

    info = result

    @property
    def traceback(self) -> str | None:
        return self._traceback

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def args(self) -> Any:
        return self._args

    @property
    def kwargs(self) -> Any:
        return self._kwargs

    @property
    def retries(self) -> int:
        return self._retries

    def ready(self) -> bool:
        return True

    def get(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        no_ack: bool = True,
        follow_parents: bool = True,
        callback: Any = None,
        on_message: Any = None,
        on_interval: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> Any:
        """The value (or, with ``propagate``, the exception) at once; the waiting options
        are accepted and ignored, as in Celery."""
        if self._state == states.SUCCESS:
            return self._result
        if self._state in states.PROPAGATE_STATES and propagate:
            raise self._result if isinstance(self._result, BaseException) else TaskRevokedError(self.id)
        return self._result

    wait = get

    def revoke(self, *args: Any, **kwargs: Any) -> None:
        self._state = states.REVOKED

    def forget(self) -> None:
        pass


class ResultSet(ResultSetExtras, ResultBase):
    """Several results handled together: ``ready``, ``completed_count``, ``join``."""

    def __init__(self, results: Any, app: Celery | None = None, **kwargs: Any) -> None:
        self.results: list[AsyncResult] = list(results or [])
        self.app = app

    def __iter__(self) -> Any:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> AsyncResult:
        return self.results[index]

    def add(self, result: AsyncResult) -> None:
        if result not in self.results:
            self.results.append(result)

    def ready(self) -> bool:
        return all(r.ready() for r in self.results)

    def successful(self) -> bool:
        return all(r.successful() for r in self.results)

    def failed(self) -> bool:
        return any(r.failed() for r in self.results)

    def waiting(self) -> bool:
        return not self.ready()

    def completed_count(self) -> int:
        return sum(1 for r in self.results if r.successful())

    def join(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        callback: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> list[Any]:
        """Every result, in order; ``timeout`` is for the whole set, as in Celery."""
        deadline = None if timeout is None else time.monotonic() + timeout
        values = []
        for result in self.results:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            value = result.get(timeout=left, propagate=propagate, interval=interval)
            if callback is not None:
                callback(result.id, value)
            values.append(value)
        return values

    get = join

    async def join_async(
        self, timeout: float | None = None, propagate: bool = True, callback: Any = None, **kwargs: Any
    ) -> list[Any]:
        """:meth:`join` for async code: every result, in order, awaited with get_async."""
        deadline = None if timeout is None else time.monotonic() + timeout
        values = []
        for result in self.results:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            value = await result.get_async(timeout=left, propagate=propagate)
            if callback is not None:
                callback(result.id, value)
            values.append(value)
        return values

    get_async = join_async

    def revoke(self, connection: Any = None, terminate: bool = False, **kwargs: Any) -> None:
        for result in self.results:
            result.revoke(terminate=terminate)

    @property
    def children(self) -> list[AsyncResult]:
        return self.results


class GroupResult(ResultSet):
    """The result of a ``group``: its ``id`` and its members. ``save()`` is a no-op (a sent
    group is stored with its tasks); ``GroupResult.restore(id)`` reads it back."""

    def __init__(self, id: str | None = None, results: Any = None, parent: Any = None, **kwargs: Any) -> None:
        super().__init__(results, **kwargs)
        self.id = id
        self.parent = parent

    def save(self, backend: Any = None) -> GroupResult:
        """Store the group in the backend (a group sent through pgtasks is stored with its
        tasks already; saving one built by hand makes :meth:`restore` find it)."""
        if self.id is None:
            raise ValueError("GroupResult.save() needs the group's id: GroupResult(id, results)")
        app = self.app or current_app()
        (backend or app.backend).save_group(self.id, self)
        return self

    def delete(self, backend: Any = None) -> None:
        """Forget a group saved by hand (task rows are the history and stay)."""
        if self.id is not None:
            app = self.app or current_app()
            (backend or app.backend).delete_group(self.id)

    @classmethod
    def restore(cls, id: str, backend: Any = None, app: Celery | None = None) -> GroupResult | None:
        """The group sent (or saved) with id ``id``, or None if there is none."""
        app = app or current_app()
        found: GroupResult | None = (backend or app.backend).restore_group(id)
        return found

    def as_tuple(self) -> tuple[Any, ...]:
        return (self.id, None), [r.as_tuple() for r in self.results]

    def __repr__(self) -> str:
        return f"<GroupResult: {self.id} [{', '.join(r.id for r in self.results)}]>"


def result_from_tuple(r: Any, app: Celery | None = None) -> AsyncResult:
    """An AsyncResult from ``as_tuple()``'s form."""
    (task_id, parent), _ = r
    return AsyncResult(task_id, app=app, parent=result_from_tuple(parent, app) if parent else None)
