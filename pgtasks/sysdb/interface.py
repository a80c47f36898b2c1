"""The system database interface: semantic methods, one parameter object each.

One SQL store implements it (:mod:`pgtasks.sysdb.store`), with two dialects:
:mod:`pgtasks.sysdb.postgres` (psycopg 3 with a pool) and :mod:`pgtasks.sysdb.sqlite` (the
standard library). One conformance suite, split by area (``tests/integration/sysdb/``), runs
against both and calls every method below.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    ChordHeaderClose,
    ClaimParams,
    CompleteParams,
    Deadline,
    EnqueueResult,
    EventEntry,
    ExecutorInfo,
    ForkParams,
    LinkResolver,
    ListTasksParams,
    MessageInfo,
    MessageParams,
    MigrationInfo,
    NewTask,
    QueueActivity,
    QueueLatency,
    QueuePause,
    QueueSettings,
    QueueStats,
    QueueUpsert,
    RecentTasksParams,
    RecoverOwnParams,
    RecoverStaleParams,
    RecoveryReport,
    ReleaseStrayParams,
    StepRecord,
    StepWrite,
    StoredOutcome,
    StreamEntry,
    TaskLinkInfo,
    TaskOwner,
    TaskRecord,
    WaitParams,
    WaitResult,
    WorkerCommand,
)
from pgtasks.sysdb.schedule_records import (
    FireResult,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleRecord,
    SchedulesStored,
    ScheduleStatusChange,
    SchedulesUpsert,
)
from pgtasks.sysdb.urls import DatabaseTarget


class EnqueueListener(ABC):
    """Receives the queue names announced by enqueuing transactions when they commit."""

    @abstractmethod
    def wait(self, timeout: float) -> set[str]:
        """Queues announced since the last call, waiting up to ``timeout`` seconds for one.
        Raises DatabaseUnavailable if the connection is lost (open a new listener)."""

    @abstractmethod
    def close(self) -> None:
        """Stop listening."""


class SystemDatabase(ABC):
    """Storage for tasks, steps, executors and versions. Callers never see SQL."""

    target: DatabaseTarget

    # -- schema -------------------------------------------------------------------------
    @abstractmethod
    def migrate(self) -> list[MigrationInfo]:
        """Apply pending migrations (at most once across concurrent processes); return them."""

    @abstractmethod
    def migrations_applied(self) -> list[MigrationInfo]:
        """The migrations recorded as applied, oldest first."""

    # -- tasks --------------------------------------------------------------------------
    @abstractmethod
    def tasks_enqueue(
        self, tasks: list[NewTask], conn: Any = None, all_or_nothing: bool = False, new_ids: bool = False
    ) -> list[EnqueueResult]:
        """Insert tasks (one statement); an existing task id or deduplication id is kept.

        With ``conn`` (a psycopg connection, PostgreSQL only) the insert joins the caller's
        open transaction and is committed or rolled back with it. With ``all_or_nothing``, a
        deduplication id of the batch held by another task writes nothing and raises
        :class:`~pgtasks.sysdb.errors.DuplicatesRefused` (in a caller's transaction, only the
        batch's statements are rolled back: a savepoint). ``new_ids``: every task id was just
        drawn at random, so only a retried attempt can find one taken (a dialect may then
        skip the conflict check and send again with it when an insert fails on one).
        """

    def tasks_enqueue_chunks(
        self,
        chunks: Iterable[list[NewTask]],
        conn: Any = None,
        all_or_nothing: bool = False,
        new_ids: bool = False,
    ) -> list[EnqueueResult]:
        """Insert tasks that arrive in chunks, all in one transaction (all or nothing), with the
        results of :meth:`tasks_enqueue` in order. A dialect may write one chunk while the
        caller prepares the next."""
        return self.tasks_enqueue([task for chunk in chunks for task in chunk], conn, all_or_nothing, new_ids)

    @abstractmethod
    def task_get(self, task_id: str) -> TaskRecord | None:
        """One task by id, or None."""

    @abstractmethod
    def tasks_list(self, params: ListTasksParams) -> list[TaskRecord]:
        """Tasks matching the filters, by creation time."""

    @abstractmethod
    def tasks_recent_ids(self, params: RecentTasksParams) -> list[str]:
        """The ids of the recent tasks (see :class:`RecentTasksParams`), in its order."""

    @abstractmethod
    def tasks_get_many(self, task_ids: list[str]) -> list[TaskRecord]:
        """The tasks among ``task_ids`` that exist, in no particular order."""

    @abstractmethod
    def task_names_recent(self, window: int) -> list[str]:
        """The sorted names of the tasks a worker received among the ``window`` newest."""

    @abstractmethod
    def tasks_claim(self, params: ClaimParams) -> list[TaskRecord]:
        """Move up to ``params.limit`` ENQUEUED tasks to PENDING for one executor.

        One statement; the attempt is counted (``recovery_attempts + 1``) before any body runs.
        """

    @abstractmethod
    def tasks_complete(self, params: CompleteParams) -> list[str]:
        """Write many outcomes in one statement, fenced on the executor; return ids written.
        Outcomes with ``has_links`` also resolve their links (``params.links``) in the same
        transaction (see links.py)."""

    @abstractmethod
    def tasks_complete_claim(
        self, complete: CompleteParams, claim: ClaimParams
    ) -> tuple[list[str], list[TaskRecord]]:
        """:meth:`tasks_complete` of ``complete``, then :meth:`tasks_claim` of ``claim``: the
        ids written and the tasks claimed. PostgreSQL sends both as one statement (one round
        trip, one commit) when no outcome has links to resolve and no claimed queue has
        limits; otherwise, and on SQLite, they are two transactions."""

    @abstractmethod
    def tasks_enqueue_canvas(self, params: CanvasEnqueue) -> list[EnqueueResult]:
        """Insert a canvas (tasks, WAITING ones, links, meta) in one transaction. Tasks whose
        id exists already are kept as they are (their marks are not applied)."""

    @abstractmethod
    def task_store_outcome(self, params: StoredOutcome) -> bool:
        """Write a task's state by hand (see :class:`StoredOutcome`); True if the row was
        inserted by this call."""

    @abstractmethod
    def chord_header_close(self, params: ChordHeaderClose) -> list[str]:
        """Close a chord header sent task by task (see :class:`ChordHeaderClose`); return the
        bodies started by this call."""

    @abstractmethod
    def group_members(self, group_id: str) -> list[str]:
        """The task ids of a saved group, in order ([] if none)."""

    @abstractmethod
    def task_children(self, task_id: str) -> list[str]:
        """The tasks ``task_id`` sent, and those waiting for its result."""

    @abstractmethod
    def task_children_many(self, task_ids: list[str]) -> dict[str, list[str]]:
        """:meth:`task_children` of each of ``task_ids`` in one statement (every id a key)."""

    @abstractmethod
    def task_links_around(self, task_id: str, limit: int) -> list[TaskLinkInfo]:
        """The links that start or end at ``task_id`` and the tasks it sent (at most ``limit``)."""

    @abstractmethod
    def task_event_set(self, task_id: str, key: str, value: str, serialization: str) -> bool:
        """Publish ``value`` under ``key`` for a task (replacing the last one); False if no
        task has that id."""

    @abstractmethod
    def tasks_to_terminate(self, task_ids: list[str]) -> list[str]:
        """Those of ``task_ids`` that were cancelled with a ``terminate`` event (Celery's
        ``revoke(terminate=True)``): their worker should stop them at once."""

    @abstractmethod
    def task_event_get(self, task_id: str, key: str) -> tuple[str, str] | None:
        """The last (serialization, value) published under ``key``, or None."""

    @abstractmethod
    def tasks_expire(self, links: LinkResolver | None = None) -> list[str]:
        """Cancel waiting tasks whose expiry has passed; return their ids. With ``links``,
        what waits on them is resolved as for a revoked task (see :meth:`task_cancel`)."""

    @abstractmethod
    def tasks_promote_due(self, queues: tuple[str, ...]) -> tuple[int, int | None]:
        """:meth:`tasks_promote_delayed`, then :meth:`tasks_next_due` of ``queues`` not
        counting the tasks just promoted: one statement on PostgreSQL."""

    @abstractmethod
    def tasks_promote_delayed(self) -> int:
        """Move DELAYED tasks whose time has come to ENQUEUED; return how many."""

    @abstractmethod
    def tasks_next_due(self, queues: tuple[str, ...]) -> int | None:
        """Milliseconds (database clock, >= 0) until the earliest DELAYED task of ``queues``
        is due, or None when none waits."""

    @abstractmethod
    def queues_announce(self, queues: tuple[str, ...]) -> None:
        """Wake the workers of ``queues`` (a NOTIFY; nothing where workers only poll)."""

    @abstractmethod
    def task_cancel(self, task_id: str, links: LinkResolver | None = None) -> bool:
        """Mark a task that has not finished CANCELLED; True if it was changed. With ``links``,
        in the same transaction: a chord waiting on it fails, its chain is cancelled, its
        errbacks are not needed (``links.py``)."""

    @abstractmethod
    def task_expire_claimed(
        self, task_id: str, executor_id: str, claim_token: str | None, links: LinkResolver
    ) -> bool:
        """End a task this executor claimed but has not started, if its expiry has passed
        (database time), resolving what waits on it; True if it was ended."""

    @abstractmethod
    def task_revoke_ahead(self, task_id: str, queue_name: str) -> bool:
        """Store ``task_id`` as revoked before any task has it (a task sent later with that id
        finds it and never runs); False if a task has the id already."""

    @abstractmethod
    def task_resume(self, task_id: str) -> bool:
        """Re-enqueue a CANCELLED, dead-lettered or waiting task with a fresh attempt count."""

    @abstractmethod
    def task_fork(self, params: ForkParams) -> TaskRecord:
        """Create a new task with the inputs of another and its steps before ``start_step``."""

    # -- durable waiting (waiting.py) ------------------------------------------------------
    @abstractmethod
    def wait_deadline(
        self, step: StepRecord, duration_ms: int, suspend_over_ms: int | None = None
    ) -> Deadline:
        """Record ``step`` with the database time ``duration_ms`` from now as its output; with
        ``duration_ms`` over ``suspend_over_ms`` also suspend the task until then (a sleep: one
        transaction). None: never suspend (a receive looks for its message first)."""

    @abstractmethod
    def task_wait(self, params: WaitParams) -> WaitResult:
        """One look of a running task at what it waits for; see :class:`WaitParams`."""

    @abstractmethod
    def message_send(self, params: MessageParams, conn: Any = None) -> bool:
        """Send a message and wake its destination if it waits for one of its topic; False
        when a message with that id was sent before. ``conn``: the caller's psycopg
        connection, whose transaction the send joins (PostgreSQL). LookupError when no task
        has the destination id."""

    @abstractmethod
    def messages_of(self, task_id: str) -> list[MessageInfo]:
        """The messages sent to a task, oldest first, received or not."""

    @abstractmethod
    def event_publish(self, step: StepRecord, key: str, value: str, serialization: str) -> StepWrite:
        """Record ``step`` and, in its transaction, set the task's event ``key`` (its history
        keeps every value by step) and wake the tasks waiting for it."""

    @abstractmethod
    def events_of(self, task_id: str) -> list[EventEntry]:
        """Every value a task set with ``event_publish``, in step order."""

    @abstractmethod
    def stream_write(self, step: StepRecord, key: str, value: str | None, serialization: str) -> StepWrite:
        """Record ``step`` and, in its transaction, append ``value`` to the task's stream
        ``key`` (None closes it)."""

    @abstractmethod
    def stream_read(self, task_id: str, key: str, start: int, limit: int) -> list[StreamEntry]:
        """Up to ``limit`` entries of a stream from position ``start``, in order."""

    # -- steps --------------------------------------------------------------------------
    @abstractmethod
    def steps_get(self, task_id: str) -> list[StepRecord]:
        """The recorded steps of a task, by function id."""

    @abstractmethod
    def steps_get_many(self, task_ids: list[str]) -> dict[str, list[StepRecord]]:
        """The recorded steps of several tasks in one query (every id is a key)."""

    @abstractmethod
    def step_record(self, step: StepRecord) -> StepWrite:
        """Record a step checkpoint if ``step.executor_id`` still owns the task.

        The primary key (task id, function id) stops two executors from both recording the
        same step: the second gets CONFLICT and must stop executing the task.
        """

    def steps_record_many(self, steps: list[StepRecord]) -> list[StepWrite]:
        """Record several checkpoints in one statement and one commit (group commit); one
        result per step, in order, with the meaning of :meth:`step_record`."""
        return [self.step_record(step) for step in steps]

    @abstractmethod
    def task_owned_by(self, task_id: str, executor_id: str, claim_token: str | None = None) -> bool:
        """True while the task is PENDING on ``executor_id`` under ``claim_token`` (checked
        before each step)."""

    def tasks_owned_by(self, owners: list[TaskOwner]) -> list[bool]:
        """:meth:`task_owned_by` for several tasks in one query; one answer per owner, in order."""
        return [self.task_owned_by(o.task_id, o.executor_id, o.claim_token) for o in owners]

    # -- executors and recovery ---------------------------------------------------------
    @abstractmethod
    def executor_register(self, info: ExecutorInfo) -> ExecutorInfo | None:
        """Insert or refresh an executor row; return the previous row if there was one."""

    @abstractmethod
    def executor_heartbeat(self, executor_id: str) -> bool:
        """Set ``last_heartbeat`` to the database's time; False if the row is gone."""

    @abstractmethod
    def executor_unregister(self, executor_id: str) -> None:
        """Remove an executor row (clean shutdown)."""

    @abstractmethod
    def executors_list(self) -> list[ExecutorInfo]:
        """Every registered executor with its last heartbeat."""

    @abstractmethod
    def executor_report(self, executor_id: str, details: str) -> bool:
        """Replace what the executor reports about itself (JSON ``details``); False if its
        row is gone."""

    # -- worker commands -----------------------------------------------------------------
    @abstractmethod
    def worker_command_send(self, command: WorkerCommand) -> None:
        """Store a command for ``command.executor_id`` and wake that worker."""

    @abstractmethod
    def worker_commands_pending(self, executor_id: str, max_age_ms: int) -> list[WorkerCommand]:
        """The unanswered commands to ``executor_id`` younger than ``max_age_ms``, oldest first."""

    @abstractmethod
    def worker_command_reply(self, command_id: str, reply: str) -> None:
        """Record the worker's JSON ``reply`` to a command."""

    @abstractmethod
    def worker_command_get(self, command_id: str) -> WorkerCommand | None:
        """One command with its reply (None while unanswered), or None if forgotten."""

    @abstractmethod
    def worker_command_forget(self, command_id: str) -> None:
        """Delete a command (its reply read, or no longer awaited)."""

    @abstractmethod
    def worker_commands_clear(self, executor_id: str) -> None:
        """Delete the commands to ``executor_id`` (a worker starting under that name) and
        every command older than an hour."""

    # -- retention -------------------------------------------------------------------------
    @abstractmethod
    def tasks_prune(
        self, older_than_ms: int | None, limit: int, queue: str | None = None, per_queue: bool = True
    ) -> dict[str, int]:
        """Delete up to ``limit`` tasks finished longer ago than their queue's age (not dead
        letters, not tasks an unfinished canvas child needs); return the count per queue.

        The age is the queue's own ``result_expires_sec`` where it has one (0: kept), else
        ``older_than_ms`` (None: kept); with ``per_queue`` False, ``older_than_ms`` for every
        queue."""

    @abstractmethod
    def tasks_prunable(
        self, older_than_ms: int | None, queue: str | None = None, per_queue: bool = True
    ) -> dict[str, int]:
        """What :meth:`tasks_prune` would delete now, per queue, without deleting."""

    @abstractmethod
    def task_forget(self, task_id: str) -> bool:
        """Delete one finished task now (False: unfinished, needed by a canvas, or unknown)."""

    @abstractmethod
    def tasks_recover_own(self, params: RecoverOwnParams) -> RecoveryReport:
        """Re-enqueue this executor's PENDING tasks (start-up recovery)."""

    @abstractmethod
    def tasks_recover_stale(self, params: RecoverStaleParams) -> RecoveryReport:
        """Re-enqueue PENDING tasks of executors whose lease expired; drop those executors."""

    @abstractmethod
    def tasks_release_stray(self, params: ReleaseStrayParams) -> list[str]:
        """Give back this executor's PENDING tasks it does not know it has; return their ids."""

    # -- queues -------------------------------------------------------------------------
    @abstractmethod
    def queue_upsert(self, params: QueueUpsert) -> QueueSettings:
        """Create or change a queue's settings; return what is stored."""

    @abstractmethod
    def queues_get(self, names: tuple[str, ...] = ()) -> list[QueueSettings]:
        """Stored settings of the named queues (all queues when empty)."""

    @abstractmethod
    def queue_stats(self) -> list[QueueStats]:
        """Unfinished tasks by queue and state, read from the partial indexes of live states
        (never a scan of finished tasks)."""

    @abstractmethod
    def queue_activity(self, window_ms: int, bucket_ms: int) -> list[QueueActivity]:
        """Tasks of the known queues started in the last ``window_ms``, counted per bucket of
        ``bucket_ms`` and per state now."""

    @abstractmethod
    def queue_latency(self, window_ms: int, sample: int) -> list[QueueLatency]:
        """Enqueue-to-start latency (p50, p95) of each known queue over the tasks started in
        the last ``window_ms``, at most the ``sample`` latest per queue (an index range, never
        the history)."""

    @abstractmethod
    def queue_set_paused(self, params: QueuePause) -> QueueSettings:
        """Pause or resume a queue (creating its row if missing); no claim takes tasks of a
        paused queue once this commits. A resume wakes the queue's listening workers."""

    # -- versions -----------------------------------------------------------------------
    @abstractmethod
    def version_register(self, version_name: str) -> None:
        """Record an application version (first sighting sets its timestamps)."""

    @abstractmethod
    def versions_list(self) -> list[tuple[str, int]]:
        """(version_name, version_timestamp) newest first."""

    # -- schedules (records in schedule_records.py) ------------------------------------
    @abstractmethod
    def schedules_upsert(self, params: SchedulesUpsert) -> SchedulesStored:
        """Create or change schedules in one transaction (see SchedulesUpsert)."""

    @abstractmethod
    def schedules_list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        """Schedules matching the filters, by name."""

    @abstractmethod
    def schedule_set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        """Pause or resume a schedule; None if there is no schedule of that name."""

    @abstractmethod
    def schedule_delete(self, name: str) -> bool:
        """Delete a schedule (its fired tasks stay); False if there was none."""

    @abstractmethod
    def schedule_fire(self, params: ScheduleFire) -> FireResult:
        """In one transaction: compare-and-set the schedule's ``last_fired_at`` (when
        ``params.cursor`` is given) and insert the fired tasks with the semantics of
        :meth:`tasks_enqueue` (an existing task id is kept, not an error). Two schedulers
        racing on the same cursor: one fires, the other gets ``fired=False`` and inserts
        nothing. Tasks are pinned to the newest registered application version that has a
        registered executor (else the newest registered; none registered: unpinned)."""

    # -- wake-ups -----------------------------------------------------------------------
    def open_listener(self) -> EnqueueListener | None:
        """A listener for enqueue notifications, or None where the database has none
        (SQLite: workers poll)."""
        return None

    def limit_outage_wait(self, seconds: float) -> None:
        """From now on, wait out an unreachable server for at most ``seconds`` (a process that
        is shutting down must not outlive its grace period retrying). Nothing where nothing
        is retried (SQLite)."""
        return None

    def open_event_listener(self) -> EnqueueListener | None:
        """A listener for the ids of tasks that set an event (``event_publish``), or None where
        the database has none: readers poll."""
        return None

    def open_done_listener(self) -> EnqueueListener | None:
        """A listener for the ids of finished tasks (newline-separated payloads, sent by the
        statement that records outcomes), or None where the database has none: waiters poll."""
        return None

    async def tasks_enqueue_async(
        self, tasks: list[NewTask], conn: Any, all_or_nothing: bool = False
    ) -> list[EnqueueResult]:
        """:meth:`tasks_enqueue` on the caller's async connection, in its transaction."""
        raise ConfigurationError(
            f"conn= with an async connection needs PostgreSQL (psycopg.AsyncConnection); "
            f"this database is {self.target.dialect}"
        )

    # -- misc ---------------------------------------------------------------------------
    @abstractmethod
    def now_ms(self) -> int:
        """The database's clock in epoch milliseconds."""

    @abstractmethod
    def close(self) -> None:
        """Close every connection."""
