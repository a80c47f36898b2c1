"""The engine: one per App or Client. Enqueues tasks, reads their state and results, and
owns the handle on the system database (``connection.DatabaseHandle``: opened and migrated
on first use), which no layer above reaches but through the engine's methods and its three
facades: ``worker_api`` (a worker process), ``admin`` (management) and ``schedules`` (the
scheduler). Each facade is built with that handle and the settings it needs, never with the
engine; the engine's modules that run tasks take the engine as a ``runtime.Runtime``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import operator
import time
from collections.abc import Callable, Sequence
from typing import Any

from pgtasks.engine import tracing
from pgtasks.engine.canvas import CanvasLinks
from pgtasks.engine.connection import DatabaseHandle
from pgtasks.engine.context import running_context
from pgtasks.engine.done_watch import FALLBACK_SECONDS
from pgtasks.engine.errors import (
    ChordError,
    DatabaseUnavailable,
    DuplicateTaskError,
    MaxRecoveryAttemptsExceeded,
    TaskCancelled,
    TaskExpired,
    TaskTimeoutError,
)
from pgtasks.engine.failures import decode_exception
from pgtasks.engine.lookups import checked_task_id, wait_timeout
from pgtasks.engine.options import EnqueueRequest, SendOptions, build_new_task, build_new_tasks, child_task_id
from pgtasks.engine.queue_watch import QueueWatch
from pgtasks.engine.registry import Registry
from pgtasks.engine.schedule_api import ScheduleStore
from pgtasks.engine.serialization import Codec
from pgtasks.engine.settings import Settings
from pgtasks.engine.task_admin import TaskAdmin
from pgtasks.engine.worker_api import WorkerApi
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.errors import DuplicatesRefused
from pgtasks.sysdb.records import (
    HOLDER_FINISHED,
    EndReason,
    EnqueueResult,
    NewTask,
    QueueSettings,
    Status,
    TaskRecord,
)
from pgtasks.sysdb.urls import DatabaseTarget

_TASK_ID, _DUPLICATE_OF = operator.itemgetter(0), operator.itemgetter(2)  # of an EnqueueResult
ENQUEUE_CHUNK = 1000  # tasks per statement in a large enqueue (see sysdb.overlapped)
WAIT_BACKOFF = Backoff(first=0.005, cap=0.5, jitter=0.0)  # polls of a waiter without notifications
PRIMARY_READ_EVERY = 5.0  # seconds: how stale a replica may keep a waiter


class Engine:
    """Durable execution on top of the system database, shared by the public API and workers.

    Its settings never change: :meth:`with_settings` derives an engine with other settings
    (sharing the registry, the declared queues and, on the same database, the connections).
    ``chord_error`` is the exception type stored on a chord body whose header failed and
    ``revoked_error`` the one a chord error names for a revoked header task; a layer with its
    own (Celery's) derives an engine with :meth:`with_chord_error`.
    """

    def __init__(
        self,
        settings: Settings,
        registry: Registry | None = None,
        *,
        chord_error: type[BaseException] = ChordError,
        revoked_error: type[BaseException] = TaskCancelled,
        declared_queues: dict[str, QueueSettings] | None = None,
        database: DatabaseHandle | None = None,
    ) -> None:
        self._settings = settings
        self.registry = registry if registry is not None else Registry()
        self.declared_queues: dict[str, QueueSettings] = {} if declared_queues is None else declared_queues
        self._codec = Codec(settings.serializer, frozenset(settings.accept_content))
        self._chord_error = chord_error
        self._revoked_error = revoked_error
        if database is None or not database.serves(
            settings.database_url, settings.schema, settings.pool_size
        ):
            database = DatabaseHandle(settings.database_url, settings.schema, settings.pool_size)
        self._database = database
        self._worker_api = WorkerApi(database, settings.result_expires, self.link_resolver())
        self._admin = TaskAdmin(database, settings.result_expires, self.link_resolver())
        self._schedules = ScheduleStore(database)
        self._queue_watch = QueueWatch(self._admin.executors)

    # -- configuration -------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The settings this engine was built with (frozen)."""
        return self._settings

    @property
    def codec(self) -> Codec:
        """Serialization of arguments and results, from the settings."""
        return self._codec

    @property
    def chord_error(self) -> type[BaseException]:
        """The exception type stored on a chord body whose header failed."""
        return self._chord_error

    def with_settings(self, settings: Settings | None = None, **changes: Any) -> Engine:
        """An engine with ``settings`` (default: these) and ``changes`` applied to them."""
        wanted = dataclasses.replace(settings if settings is not None else self._settings, **changes)
        return self._derive(wanted, self._chord_error, self._revoked_error)

    def with_chord_error(
        self, chord_error: type[BaseException], revoked_error: type[BaseException] = TaskCancelled
    ) -> Engine:
        """An engine that stores ``chord_error`` on a chord body whose header failed (naming
        a revoked header task's ``revoked_error``)."""
        return self._derive(self._settings, chord_error, revoked_error)

    def _derive(
        self, settings: Settings, chord_error: type[BaseException], revoked_error: type[BaseException]
    ) -> Engine:
        return Engine(
            settings,
            self.registry,
            chord_error=chord_error,
            revoked_error=revoked_error,
            declared_queues=self.declared_queues,
            database=self._database,
        )

    # -- facades -------------------------------------------------------------------------
    @property
    def worker_api(self) -> WorkerApi:
        """What a worker process does through the engine (claims, outcomes, lease, ...)."""
        return self._worker_api

    @property
    def admin(self) -> TaskAdmin:
        """Management of tasks, queues and executors."""
        return self._admin

    @property
    def schedules(self) -> ScheduleStore:
        """The stored schedules."""
        return self._schedules

    def link_resolver(self) -> CanvasLinks:
        """What completes a task whose outcome other tasks wait for (chains, chords)."""
        return CanvasLinks(self._codec, self._chord_error, self._revoked_error)

    # -- database ------------------------------------------------------------------------
    @property
    def database(self) -> DatabaseHandle:
        """The handle on the system database, for the engine's own modules (execution,
        steps, canvases, stored states); the layers above use the facades, never this."""
        return self._database

    @property
    def database_target(self) -> DatabaseTarget:
        """Where the system database is (dialect, schema, display URL); connects nothing."""
        return self._database.target

    def forget_connections(self, *, one_task_at_a_time: bool = False) -> None:
        """In a forked child: drop the parent's connections without touching them (closing
        would end the parent's sessions); the child opens its own on next use.
        ``one_task_at_a_time`` (a prefork child): no other task's checkpoint can share a
        commit with one of its own, so each is written on the task's thread."""
        self._database.forget()
        self._database.inline_checkpoints = one_task_at_a_time

    def close(self) -> None:
        """Close the database connections (they reopen on next use)."""
        self._database.close()

    # -- identity ------------------------------------------------------------------------
    def version(self) -> str:
        """The application version: configured, or a hash of the registered tasks' source."""
        return self.settings.application_version or self.registry.version()

    def trusted_modules(self) -> set[str]:
        """Modules whose exception classes may be rebuilt from stored errors."""
        return self.registry.modules()

    # -- enqueue -------------------------------------------------------------------------
    def enqueue(
        self, requests: list[EnqueueRequest], conn: Any = None, on_duplicate: str = "raise"
    ) -> list[str]:
        """Insert tasks in one statement and return their ids.

        A task id that exists already returns that task. A deduplication id held by an
        unfinished task raises :class:`DuplicateTaskError` naming the request, and then no task
        of the batch is written (all or nothing); with ``on_duplicate="return"`` the others are
        written and that request returns the id of the task that holds it. Inside a running
        task, tasks sent without an explicit id get ids derived from the parent's id and
        position, so a re-run of the parent sends each child once.
        """
        build = self._row_builder()
        # Ids drawn here (no explicit id, none derived from a running parent) are new ones.
        new_ids = running_context() is None and all(r.options.task_id is None for r in requests)
        names = [r.name for r in requests]
        return self._insert(names, lambda a, b: build(requests[a:b]), conn, on_duplicate, new_ids)

    def enqueue_many(
        self,
        name: str,
        arg_lists: Sequence[Sequence[Any] | None],
        options: SendOptions,
        conn: Any = None,
        on_duplicate: str = "raise",
    ) -> list[str]:
        """:meth:`enqueue` of one task ``name`` per argument list, all sent with ``options``
        (what ``Task.map_enqueue`` sends), without a request per task: the options are checked
        once and each row is built from its arguments. Inside a running task (its children's
        ids derive from it), one request per task as before. A task id in ``options`` is
        refused: it cannot be every task's."""
        if running_context() is not None and options.task_id is None:
            return self.enqueue([options.request(name, args) for args in arg_lists], conn, on_duplicate)
        settings, codec = self.settings, self.codec

        def build(start: int, stop: int) -> list[NewTask]:
            return build_new_tasks(
                name,
                arg_lists[start:stop],
                options,
                codec,
                settings.default_queue,
                settings.max_recovery_attempts,
                max_payload_bytes=settings.max_payload_bytes,
            )

        return self._insert([name] * len(arg_lists), build, conn, on_duplicate, new_ids=True)

    def _insert(
        self,
        names: list[str],
        build: Callable[[int, int], list[NewTask]],
        conn: Any,
        on_duplicate: str,
        new_ids: bool,
    ) -> list[str]:
        """Insert the tasks ``names`` (one statement, or chunks of one transaction for many);
        ``build(start, stop)`` gives the rows of tasks ``start`` to ``stop``; ``new_ids``: it
        draws every task's id."""
        if on_duplicate not in ("raise", "return"):
            raise ValueError("on_duplicate must be 'raise' or 'return'")
        rows: list[NewTask] = []
        strict = on_duplicate == "raise"
        count = len(names)
        try:
            with tracing.sending(names) as stamp:

                def part(start: int, stop: int) -> list[NewTask]:
                    built = build(start, stop)
                    if stamp is not tracing.unchanged:
                        built = [stamp(row) for row in built]
                    rows.extend(built)
                    return built

                sysdb = self._database.sysdb
                if count <= ENQUEUE_CHUNK:
                    results = sysdb.tasks_enqueue(part(0, count), conn, strict, new_ids)
                else:  # the database writes one chunk while the next is being serialized
                    chunks = (part(i, min(i + ENQUEUE_CHUNK, count)) for i in range(0, count, ENQUEUE_CHUNK))
                    results = sysdb.tasks_enqueue_chunks(chunks, conn, strict, new_ids)
        except DuplicatesRefused as refused:  # a try, not a context manager: every send passes here
            raise _refused_error(rows, refused) from None
        ids = _sent_ids(rows, results, on_duplicate)
        self._queue_watch.check({row.queue_name for row in rows})
        return ids

    async def enqueue_async(
        self, requests: list[EnqueueRequest], conn: Any = None, on_duplicate: str = "raise"
    ) -> list[str]:
        """:meth:`enqueue` without blocking the event loop: on a thread, or with ``conn`` a
        ``psycopg.AsyncConnection``, as statements of that connection's transaction (the
        tasks exist once the caller commits; a rollback leaves none)."""
        if conn is None or not is_async_connection(conn):
            return await asyncio.to_thread(self.enqueue, requests, conn, on_duplicate)
        if on_duplicate not in ("raise", "return"):
            raise ValueError("on_duplicate must be 'raise' or 'return'")
        rows: list[NewTask] = []
        try:
            with tracing.sending([r.name for r in requests]) as stamp:
                built = [stamp(row) for row in self._row_builder()(requests)]
                rows.extend(built)
                results = await self._database.sysdb.tasks_enqueue_async(built, conn, on_duplicate == "raise")
        except DuplicatesRefused as refused:
            raise _refused_error(rows, refused) from None
        return _sent_ids(rows, results, on_duplicate)

    def _row_builder(self) -> Callable[[list[EnqueueRequest]], list[NewTask]]:
        """A function turning requests into the rows to insert. Inside a running task, tasks
        sent without an explicit id get ids derived from the parent's id and position, so a
        re-run of the parent sends each child once."""
        parent = running_context()
        if parent is not None and parent.engine.settings.database_url != self.settings.database_url:
            parent = None  # a task of another database is no parent of these
        settings, codec = self.settings, self.codec
        queue, attempts, max_bytes = (
            settings.default_queue,
            settings.max_recovery_attempts,
            settings.max_payload_bytes,
        )

        def build(part: list[EnqueueRequest]) -> list[NewTask]:
            if parent is None:
                return [build_new_task(r, codec, queue, attempts, max_payload_bytes=max_bytes) for r in part]
            built = []
            for request in part:
                if request.options.task_id is None:
                    child_id = child_task_id(parent.task_id, parent.take_function_id())
                    options = dataclasses.replace(request.options, task_id=child_id)
                    request = dataclasses.replace(request, options=options)
                built.append(
                    build_new_task(
                        request, codec, queue, attempts, parent.task_id, max_payload_bytes=max_bytes
                    )
                )
            return built

        return build

    # -- results -------------------------------------------------------------------------
    def get_task(self, task_id: str) -> TaskRecord | None:
        return self._database.sysdb.task_get(checked_task_id(task_id))

    def read_task(self, task_id: str, fresh: bool = False) -> TaskRecord | None:
        """The task's row for a reader that tolerates lag (result polling): from the replica
        of ``?read_url=`` when there is one and ``fresh`` is False, else from the database.
        A task the replica does not show (not replicated yet), or a replica that cannot be
        reached, is read from the database: a replica read may be late, never wrong. An id
        no task can have is refused (lookups.py), before any query."""
        checked_task_id(task_id)
        if fresh or not self._database.target.read_url:
            return self._database.sysdb.task_get(task_id)
        try:
            record = self._database.reader().task_get(task_id)
        except DatabaseUnavailable:
            record = None
        return record if record is not None else self._database.sysdb.task_get(task_id)

    def wait(self, task_id: str, timeout: float | None = None) -> TaskRecord:
        """Poll until the task reaches a terminal status; raise TaskTimeoutError after ``timeout``.
        With a ``read_url`` replica the polls read it, except one every PRIMARY_READ_EVERY
        seconds and the last, which read the database itself (a stuck replica delays a
        result by that much at most)."""
        timeout = wait_timeout(timeout)  # NaN would never expire; read_task checks the id
        deadline = None if timeout is None else time.monotonic() + timeout
        intervals = WAIT_BACKOFF.delays()
        record = None
        asked_primary = time.monotonic()
        while True:
            now = time.monotonic()
            remaining = None if deadline is None else deadline - now
            last = remaining is not None and remaining <= 0
            fresh = last or now - asked_primary >= PRIMARY_READ_EVERY
            if fresh:
                asked_primary = now
            with contextlib.suppress(DatabaseUnavailable):  # a restart or a blip: keep waiting
                record = self.read_task(task_id, fresh=fresh)
            if record is not None and record.status.is_terminal:
                return record
            if last:
                raise _wait_timeout(task_id, record, timeout)
            interval = next(intervals)
            time.sleep(interval if remaining is None else min(interval, remaining))

    async def wait_async(self, task_id: str, timeout: float | None = None) -> TaskRecord:
        """:meth:`wait` without blocking the event loop, woken by the notification that the
        task finished (PostgreSQL); where there are none, it polls as :meth:`wait` does. The
        read after a notification, and the last one, go to the database itself."""
        timeout = wait_timeout(timeout)
        checked_task_id(task_id)  # before the watch starts
        deadline = None if timeout is None else time.monotonic() + timeout
        watch = self._database.done_watch()
        listening = await asyncio.to_thread(watch.start)
        intervals = itertools.repeat(FALLBACK_SECONDS) if listening else WAIT_BACKOFF.delays()
        record = None
        fresh = False
        asked_primary = time.monotonic()
        while True:
            woken = watch.watch(task_id)  # before the read: a finish after it still wakes us
            try:
                now = time.monotonic()
                remaining = None if deadline is None else deadline - now
                last = remaining is not None and remaining <= 0
                fresh = fresh or last or now - asked_primary >= PRIMARY_READ_EVERY
                if fresh:
                    asked_primary = now
                with contextlib.suppress(DatabaseUnavailable):
                    record = await asyncio.to_thread(self.read_task, task_id, fresh)
                if record is not None and record.status.is_terminal:
                    return record
                if last:
                    raise _wait_timeout(task_id, record, timeout)
                interval = next(intervals)
                pause = interval if remaining is None else min(interval, remaining)
                await asyncio.wait({woken}, timeout=pause)
                fresh = woken.done()
            finally:
                watch.unwatch(task_id, woken)

    def result_of(self, record: TaskRecord) -> Any:
        """The return value of a finished task, or raise what it raised."""
        if record.status is Status.SUCCESS:
            if record.output is None:
                return None
            return self.codec.loads(record.serialization, record.output, f"result of task {record.task_id}")
        if record.status is Status.ERROR:
            raise decode_exception(record.error or "{}", self.trusted_modules())
        if record.status is Status.CANCELLED:
            if record.end_reason is EndReason.EXPIRED:
                raise TaskExpired(f"task {record.task_id} ({record.name}) expired before it started")
            raise TaskCancelled(f"task {record.task_id} ({record.name}) was cancelled")
        if record.status is Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED:
            raise MaxRecoveryAttemptsExceeded(
                f"task {record.task_id} ({record.name}) was started {record.recovery_attempts} times "
                f"without finishing (max_recovery_attempts={record.max_recovery_attempts}); "
                "it is dead-lettered: resume it by hand once the cause is fixed"
            )
        raise ValueError(f"task {record.task_id} has not finished (status {record.status.value})")


def _refused_error(rows: list[NewTask], refused: DuplicatesRefused) -> DuplicateTaskError:
    """The refusal of an all-or-nothing batch as DuplicateTaskError naming the first request
    refused (its position in ``rows``, the batch as built)."""
    position = {row.task_id: i for i, row in enumerate(rows)}
    result = min(
        (r for r in refused.results if r.duplicate_of is not None), key=lambda r: position[r.task_id]
    )
    i = position[result.task_id]
    row = rows[i]
    return DuplicateTaskError(
        f"request {i + 1} of {len(rows)}: task {row.name!r} with deduplication_id "
        f"{row.deduplication_id!r} is already queued on {row.queue_name!r} as task "
        f"{result.duplicate_of}; no task of the batch was written",
        result.duplicate_of,
    )


def _sent_ids(rows: list[NewTask], results: list[EnqueueResult], on_duplicate: str) -> list[str]:
    """The id each request resolved to: its own (inserted, or the same id existed), or the
    holder of its deduplication id (``on_duplicate="return"``); DuplicateTaskError otherwise."""
    if not any(map(_DUPLICATE_OF, results)):  # the common case: each its own (C loops, per task)
        return list(map(_TASK_ID, results))
    ids = []
    for row, result in zip(rows, results, strict=True):
        if result.duplicate_of is None:
            ids.append(result.task_id)
        elif on_duplicate == "return" and result.duplicate_of != HOLDER_FINISHED:
            ids.append(result.duplicate_of)
        else:
            raise DuplicateTaskError(
                f"task {row.name!r} with deduplication_id {row.deduplication_id!r} is already "
                f"queued on {row.queue_name!r} as task {result.duplicate_of}",
                result.duplicate_of,
            )
    return ids


def is_async_connection(conn: Any) -> bool:
    """A psycopg AsyncConnection, recognised without importing psycopg (absent with SQLite)."""
    return any(
        cls.__name__ == "AsyncConnection" and cls.__module__.startswith("psycopg")
        for cls in type(conn).__mro__
    )


def _wait_timeout(task_id: str, record: TaskRecord | None, timeout: float | None) -> TaskTimeoutError:
    if record is None:
        return TaskTimeoutError(f"no task with id {task_id!r} exists (waited {timeout}s)")
    return TaskTimeoutError(f"task {task_id} is still {record.status.value} after {timeout}s")
