"""Celery's ``celery.result.AsyncResult``: the state and result of a task in the database, by
id, and ``result_from_tuple``. States are Celery's, read from pgtasks' statuses by
bridge/outcomes.py.

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
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.exception_meta import exception_to_python
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.outcomes import celery_exception, celery_state
from pgtasks.compat.bridge.ready_watch import ready_watch
from pgtasks.compat.celery import states
from pgtasks.compat.celery._state import get_current_app, task_join_will_block
from pgtasks.compat.celery.exceptions import IncompleteStream, TaskRevokedError, TimeoutError
from pgtasks.compat.celery.result.base import ResultBase, picklable_class
from pgtasks.compat.celery.result.promise import Promise
from pgtasks.compat.celery.utils.graph import DependencyGraph
from pgtasks.engine.errors import (
    DatabaseUnavailable,
    MaxRecoveryAttemptsExceeded,
    RetryRequested,
    TaskTimeoutError,
)
from pgtasks.engine.events import task_state
from pgtasks.engine.failures import decode_exception
from pgtasks.engine.lookups import checked_task_id, poll_interval, wait_timeout
from pgtasks.support.backoff import Backoff, Retry
from pgtasks.sysdb.records import Status, TaskRecord

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.result.group_result import GroupResult

__all__ = ["AsyncResult", "result_from_tuple"]

FIRST_POLL = 0.005
GROUP_LINKS_READ = 50  # links read around a child to find the group it belongs to
SYNC_SUBTASK_MESSAGE = (
    "Never call result.get() within a task!\n"
    "See https://docs.celeryq.dev/en/latest/userguide/tasks.html#avoid-launching-synchronous-subtasks\n"
)  # Celery's E_WOULDBLOCK, to its last newline


class AsyncResult(ResultBase):
    """The state and result of the task ``id``; every read goes to the database."""

    TimeoutError = TimeoutError
    supports_native_join = True  # join_native waits on the database, as join does

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
        self.id = checked_task_id(str(id))  # ValueError for a NUL or a lone surrogate
        # app.AsyncResult is this class bound to its app (Celery's subclass_with_self)
        self.app = app if app is not None else (getattr(type(self), "app", None) or get_current_app())
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

    def __reduce__(self) -> tuple[Any, ...]:
        # The app stays behind (it holds the engine and its sessions): the copy reads
        # through the current app, as one made by AsyncResult(id) does.
        return picklable_class(type(self)), (self.id, None, self._name, None, self._parent)

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
        return flag("task_track_started", self.app.conf.task_track_started)

    def _state_of(self, record: TaskRecord | None) -> str:
        if record is None:
            return states.PENDING
        custom = self._custom(record)
        if custom is not None:
            return custom[0]
        if record.status.is_terminal and _ignored(record) and not self._error_kept(record):
            return states.PENDING  # sent with ignore_result: Celery stores nothing
        state = celery_state(record.status, record.retries, self._track_started(record.name))
        if self._on_ready is not None and state in states.READY_STATES:
            self._on_ready(self)  # whoever reads the ready state first runs then()'s callbacks
        return state

    def _error_kept(self, record: TaskRecord) -> bool:
        """A failure of a task sent with ``ignore_result`` that Celery stores anyway: its
        task has ``store_errors_even_if_ignored`` (the app's setting for a task unknown here)."""
        if record.status not in (Status.ERROR, Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED):
            return False
        task = self.app.tasks.get(record.name) if record.name else None
        if task is not None:
            return bool(task.store_errors_even_if_ignored)
        return flag("task_store_errors_even_if_ignored", self.app.conf.task_store_errors_even_if_ignored)

    def _custom(self, record: TaskRecord) -> tuple[str, Any] | None:
        """The state set with ``update_state`` (by the task, or for it from elsewhere): read
        until the task ends, except while it waits to be retried (RETRY is the newer state)."""
        if record.status.is_terminal:
            return None
        if record.retries and record.status in (Status.ENQUEUED, Status.DELAYED):
            return None
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
            return _custom_value(*custom)
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
            # Celery rebuilds a class of any module the process has imported
            stored = decode_exception(record.error, self.app.engine.trusted_modules(), any_loaded=True)
            if state == states.RETRY and isinstance(stored, RetryRequested):
                return None  # self.retry() without exc: Celery stores no reason
            return celery_exception(stored, record.error)
        return None

    @property
    def result(self) -> Any:
        """The return value, or the exception when the task failed (or is waiting to retry)."""
        return self._value_of(self.record())

    info = result

    @property
    def traceback(self) -> str | None:
        """The formatted traceback of a failed task."""
        return self._traceback_of(self.record())

    def _traceback_of(self, record: TaskRecord | None) -> str | None:
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
        if disable_sync_subtasks and task_join_will_block():
            raise RuntimeError(SYNC_SUBTASK_MESSAGE)
        if self.ignored:
            return None
        # A first poll after milliseconds, then twice as long each time up to ``interval``;
        # the timeout is read (a number or its string, as Celery) only once a poll finds the
        # task not ready: TypeError or ValueError naming it for what is not one (NaN too,
        # which would never expire).
        polls: Retry | None = None
        parents = self._ancestors() if follow_parents and propagate else []
        seen: tuple[str, Any] | None = None
        while True:
            try:
                # The task first: a parent's failure commits with (or before) what it caused.
                record = self.record()
                parents = raise_failed(parents)
            except DatabaseUnavailable:
                record = None
            if on_message is not None and record is not None:
                seen = self._tell_change(record, seen, on_message)
            if record is not None and self._state_of(record) in states.READY_STATES:
                value = self._value_of(record)
                if callback is not None:
                    callback(self.id, value)
                if propagate and self._state_of(record) in states.PROPAGATE_STATES:
                    raise value
                return value
            if on_interval is not None:
                on_interval()
            if polls is None:
                every = poll_interval(interval)
                polls = Backoff(min(FIRST_POLL, every), every, jitter=0.0).retrying(
                    wait_timeout(timeout, text=True), last_try_at_deadline=True
                )
            pause = polls.next_delay()
            if pause is None:
                if record is None:
                    raise TimeoutError(f"The operation timed out (no task with id {self.id!r} exists).")
                raise TimeoutError("The operation timed out.")
            time.sleep(pause)

    wait = get

    def _tell_change(
        self, record: TaskRecord, seen: tuple[str, Any] | None, on_message: Any
    ) -> tuple[str, Any]:
        """``get(on_message=...)``: the task's state message (``task_id``, ``status``,
        ``result``, ``traceback``, ``date_done``) when its state or meta changed since the
        last poll, as Celery's backends deliver each state the task records."""
        now = (self._state_of(record), self._value_of(record))
        if now != seen:
            on_message(
                {
                    "task_id": self.id,
                    "status": now[0],
                    "result": now[1],
                    "traceback": self._traceback_of(record),
                    "children": [],
                    "date_done": _date_done(record),
                }
            )
        return now

    def _ancestors(self) -> list[AsyncResult]:
        return ancestors(self._parent)

    async def get_async(
        self, timeout: float | None = None, propagate: bool = True, callback: Any = None, **kwargs: Any
    ) -> Any:
        """:meth:`get` for async code (pgtasks' ``_async`` twin; Celery has none): awaits the
        task without blocking the event loop, woken by the database's notification that it
        finished, and may be awaited inside a running task. Raises TimeoutError as get does."""
        if self.ignored:
            return None
        try:
            await self.app.engine.wait_async(self.id, wait_timeout(timeout, text=True))
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
    def args(self) -> list[Any] | None:
        """The task's positional arguments, a list as Celery's backends return them."""
        record = self.record()
        if record is None:
            return None
        args, _ = self.app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
        return list(args)

    @property
    def kwargs(self) -> dict[str, Any] | None:
        record = self.record()
        if record is None:
            return None
        _, kwargs = self.app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
        return kwargs

    @property
    def retries(self) -> int | None:
        """The retries of the run whose outcome the state shows: while the task waits to
        retry, the run that asked (Celery stores its request's count), else the last run."""
        record = self.record()
        if record is None:
            return None
        if self._state_of(record) == states.RETRY:
            return max(record.retries - 1, 0)
        return record.retries

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
        return _date_done(self.record())

    def _get_task_meta(self) -> dict[str, Any]:
        """The task's meta as Celery's backend gives it (``status``, ``result``, ``traceback``,
        ``children``, ``date_done``, ``task_id``, and ``name``, ``args``, ``kwargs``,
        ``worker``, ``retries``, ``queue``), from one read of its row: what libraries such as
        celery-progress read."""
        record = self.record()
        meta: dict[str, Any] = {
            "status": self._state_of(record),
            "result": self._value_of(record),
            "traceback": self._traceback_of(record),
            "children": self.children if record is not None else None,
            "date_done": _date_done(record),
            "task_id": self.id,
        }
        if record is not None:
            codec = self.app.engine.codec
            args, kwargs = codec.loads_inputs(record.serialization, record.inputs, record.name)
            meta.update(
                name=record.name,
                args=list(args),
                kwargs=kwargs,
                worker=record.executor_id,
                retries=record.retries,
                queue=record.queue_name,
            )
        return meta

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
    def children(self) -> list[AsyncResult | GroupResult] | None:
        """The tasks this one sent and those waiting for its result, the members of a group
        as one GroupResult, as Celery records them. With none: ``[]`` once the task has
        ended (Celery stores its outcome with its children, an empty list), None before (as
        Celery reports a task with nothing stored)."""
        admin = self.app.engine.admin
        found: list[AsyncResult | GroupResult] = []
        groups: set[str] = set()
        for child in admin.children(self.id):
            around = admin.links_around(child, GROUP_LINKS_READ)
            group_id = next((x.parent_id for x in around if x.kind == "group" and x.child_id == child), None)
            if group_id is None:
                found.append(AsyncResult(child, app=self.app))
            elif group_id not in groups:
                groups.add(group_id)
                members = [AsyncResult(m, app=self.app) for m in admin.group_members(group_id)]
                found.append(self.app.GroupResult(group_id, members))
        if found:
            return found
        return [] if self.ready() else None

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

    def iterdeps(self, intermediate: bool = False) -> Iterator[tuple[Any, Any]]:
        """``(parent, result)`` for this result and, breadth first, every child of a ready
        one (a group's children are its members); IncompleteStream at an unready one unless
        ``intermediate``."""
        stack: deque[tuple[Any, Any]] = deque([(None, self)])
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

    def then(self, callback: Any, on_error: Any = None, weak: bool = False) -> Promise:
        """Call ``callback(result)`` once the task is ready (succeeded, failed or revoked),
        on a pgtasks thread that waits for it (woken by the database's notification; a task
        already done is seen by its first read), or at once when this result already ran them;
        a read of the ready state (``get``, ``state``) runs the callbacks too, once in all.
        ``on_error(exc)`` gets what ``callback`` raised. ``weak``: this result is held weakly
        while waiting (dropped, its callbacks never run).
        Returns the promise of ``callback``'s value."""
        follower = self.on_ready.then(callback, on_error)
        if not self.on_ready.ready:
            self._watch(weak)
        return follower

    def fulfil_if_ready(self) -> None:
        """Read the state; a ready one fulfils :attr:`on_ready` (used by then()'s watcher)."""
        _ = self.state

    def _watch(self, weak: bool) -> None:
        ready_watch().add(self, weak)

    def as_list(self) -> list[str]:
        """This result's id, then its parents' (a chain's results, last first)."""
        ids = [self.id]
        parent: Any = self.parent  # an AsyncResult (a chain's previous task)
        if parent is not None:
            ids.extend(parent.as_list())
        return ids

    def get_leaf(self) -> Any:
        """The value of the last result reached from this one through its children."""
        value = None
        for _, node in self.iterdeps():
            value = node.get()
        return value

    def build_graph(
        self, intermediate: bool = False, formatter: Callable[[Any], Any] | None = None
    ) -> DependencyGraph:
        """This result and its descendants as a DependencyGraph (each child depends on its
        parent); ``formatter`` maps each result to the node stored."""
        graph = DependencyGraph()
        shown = formatter or (lambda result: result)
        for parent, node in self.iterdeps(intermediate=intermediate):
            graph.add_arc(shown(node))
            if parent is not None:
                graph.add_edge(shown(parent), shown(node))
        return graph

    @property
    def graph(self) -> DependencyGraph:
        return self.build_graph()

    def maybe_throw(self, propagate: bool = True, callback: Callable[[str, Any], Any] | None = None) -> Any:
        """The task's value; with ``propagate``, raise its exception if it failed (or was
        revoked). ``callback(id, value)`` is called first, as Celery does."""
        state, value = self.state, self.result
        if state in states.PROPAGATE_STATES and propagate:
            raise value if isinstance(value, BaseException) else TaskRevokedError(self.id)
        if callback is not None:
            callback(self.id, value)
        return value

    maybe_reraise = maybe_throw

    def throw(self, *args: Any, **kwargs: Any) -> None:
        """Raise the given exception (Celery passes it to the result's waiters)."""
        if args and isinstance(args[0], BaseException):
            raise args[0]
        raise TypeError("throw() takes the exception to raise")

    def revoke_by_stamped_headers(
        self, headers: Any, terminate: bool = False, signal: Any = None, **kwargs: Any
    ) -> None:
        """Revoke every task stamped with one of ``headers``' values (see
        ``app.control.revoke_by_stamped_headers``)."""
        self.app.control.revoke_by_stamped_headers(headers, terminate=terminate, signal=signal)


def _ignored(record: TaskRecord) -> bool:
    """The task was sent with ``ignore_result`` (planning.py notes it in its meta)."""
    if not record.meta or "ignore_result" not in record.meta:
        return False
    try:
        return json.loads(record.meta).get("ignore_result") is True
    except (ValueError, AttributeError):
        return False


def _date_done(record: TaskRecord | None) -> dt.datetime | None:
    if record is None or not record.status.is_terminal:
        return None
    return dt.datetime.fromtimestamp(record.updated_at / 1000, dt.timezone.utc)


def _leaves(node: Any) -> list[AsyncResult]:
    """The task results of a result: itself, or a group's members (nested groups unrolled)."""
    if isinstance(node, AsyncResult):
        return [node]
    return [leaf for member in getattr(node, "results", None) or [] for leaf in _leaves(member)]


def eldest(result: Any) -> Any:
    """The first result of a step of a workflow (a chord body's header, a chain's first task):
    the one whose parent is the step before it. Reads the parents set in memory only."""
    while True:
        parent = result._parent if isinstance(result, AsyncResult) else result.parent
        if parent is None:
            return result
        result = parent


def ancestors(parent: Any) -> list[AsyncResult]:
    """The results a result was sent after, from its ``parent`` on, oldest first, groups by
    their members: the parents set when the canvas was sent (a result read by id has none,
    as in Celery)."""
    lineage: list[Any] = []
    node = parent
    while node is not None:
        lineage.append(node)
        node = node._parent if isinstance(node, AsyncResult) else getattr(node, "parent", None)
    found: list[AsyncResult] = []
    for node in reversed(lineage):
        found.extend(_leaves(node))
    return found


def raise_failed(results: list[AsyncResult]) -> list[AsyncResult]:
    """Raise the error of the first of ``results`` that failed or was revoked (Celery's
    ``get`` re-raises a failed parent's error before waiting); return those not done yet."""
    left: list[AsyncResult] = []
    for result in results:
        record = result.record()
        state = result._state_of(record)
        if state in states.PROPAGATE_STATES:
            # An older result read as unfinished may have failed since, causing this failure
            # (a failure commits before what it causes): read those again first.
            raise_failed(left)
            value = result._value_of(record)
            raise value if isinstance(value, BaseException) else TaskRevokedError(result.id)
        if state != states.SUCCESS:
            left.append(result)
    return left


def result_from_tuple(r: Any, app: Celery | None = None) -> AsyncResult | GroupResult:
    """A result from ``as_tuple()``'s form (also after a JSON round trip): an AsyncResult, or
    a GroupResult with its members (``((id, parent), [member tuples])``), parents rebuilt."""
    if isinstance(r, ResultBase):
        return r  # type: ignore[return-value]
    res, nodes = r
    task_id, parent = res if isinstance(res, (list, tuple)) else (res, None)
    rebuilt_parent = result_from_tuple(parent, app) if parent else None
    if nodes is not None:
        members = [result_from_tuple(node, app) for node in nodes]
        return (app or get_current_app()).GroupResult(task_id, members, parent=rebuilt_parent)
    return AsyncResult(task_id, app=app, parent=rebuilt_parent)


def _custom_value(state: str, meta: Any) -> Any:
    """The result of a state published with ``update_state``: its meta, read as Celery's
    backend reads it, an exception for an exception state (FAILURE, RETRY, REVOKED; a meta
    without ``exc_type`` raises ValueError there, as in Celery)."""
    if state not in states.EXCEPTION_STATES or isinstance(meta, BaseException):
        return meta
    exc = exception_to_python(meta)
    if not isinstance(exc, BaseException):
        raise ValueError(f"Exception information must include the exception type (state {state}: {meta!r})")
    return exc
