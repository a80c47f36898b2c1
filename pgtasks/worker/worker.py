"""The worker: claims tasks of its queues, hands them to its pool (prefork by default; see
:mod:`pgtasks.worker.pools`), writes their outcomes in batches.

The process-level concerns of ``pgtasks worker`` (signals, the banner) live in
:mod:`pgtasks.worker.process`.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pgtasks.engine import tracing
from pgtasks.engine.core import Engine
from pgtasks.engine.crashpoints import crashpoint
from pgtasks.engine.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.engine.failures import is_expected
from pgtasks.engine.redaction import masked_inputs, scrub, secret_args_of, sender_named, sender_shown
from pgtasks.engine.settings import check_name_length, validate_queue_name
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.records import (
    ClaimParams,
    CompleteParams,
    ExecutorInfo,
    LinkResolver,
    Outcome,
    RecoveryReport,
    ReleaseStrayParams,
    Status,
    StepRecord,
    TaskRecord,
)
from pgtasks.sysdb.urls import redact_url
from pgtasks.worker.completer import BatchCompleter
from pgtasks.worker.control import CustomCommands, WorkerControl, inspected_conf
from pgtasks.worker.due import DueTimer
from pgtasks.worker.health import fresh
from pgtasks.worker.lease import LeaseKeeper
from pgtasks.worker.logs import (
    LOG_ABANDONED,
    LOG_FAILURE,
    LOG_RECEIVED,
    LOG_RECEIVED_INPUTS,
    LOG_RELEASED,
    LOG_RETRY,
    LOG_SUCCESS,
    LOG_WAITS,
    TaskLogData,
    clip,
    error_repr,
    log_task,
    result_repr,
    retry_repr,
)
from pgtasks.worker.metrics import WorkerMetrics
from pgtasks.worker.pools import DEFAULT_POOL, Killed, PoolOptions, make_pool
from pgtasks.worker.pruner import PRUNE_INTERVAL, Pruner
from pgtasks.worker.queues import QueueBook
from pgtasks.worker.std_streams import reopen_closed
from pgtasks.worker.wakeups import WakeOnEnqueue

log = logging.getLogger("pgtasks.worker")

STRAY_GRACE_SECONDS = 10.0  # a claim this young may still be on its way to the pool
GATHER_SECONDS = 0.002  # with a backlog, how long a claim waits for more slots to free up
# Pauses between claims the database refused (and start-up writes it refused): 0.1 s doubling
# up to 5 s.
CLAIM_BACKOFF = Backoff(first=0.1, cap=5.0)
# How long a worker's start-up writes wait out a database that went away after the start-up
# wait found it (a restart in the middle of the start), before the start fails.
START_OUTAGE_SECONDS = 120.0
DEFAULT_PREFETCH_MULTIPLIER = 4  # Celery's worker_prefetch_multiplier default
DEFAULT_SHUTDOWN_GRACE = 30.0  # seconds a warm shutdown waits for running tasks
# Adaptive claim-ahead (threads, asyncio): beyond the free slots, hold as many tasks as the
# worker finished in this many seconds lately (within the prefetch multiplier): more than a
# claim's round trip (two claims of hundreds, while both streams run), so that the held tasks
# never run out while a claim is on its way, and under HELD_CHECK_SECONDS, so that they rarely
# need a check before they start (0.1 drained no-op tasks 13 to 29% slower on threads -c 8 and
# -c 32 than 0.25; 0.5 no faster than 0.25). A backlog of short tasks is claimed in batches of
# hundreds, slow tasks one or two beyond the free slots, so other workers get theirs.
AHEAD_SECONDS = 0.25
# Without an explicit prefetch multiplier (the default), a worker whose tasks lately ran short
# holds up to this many beyond its processes however few they are: what it finishes in
# AHEAD_SECONDS (a window of 8 on `-P prefork -c 2` kept the children idle between claims of
# five tasks: the no-op drain ran 2.5 to 3.5 times as fast with 500, docs/performance.md).
SHORT_TASKS_AHEAD = 1000
# Short: tasks that lately ran this long at most (the pool's moving average). Longer ones keep
# the default multiplier's bound: three-step tasks (a few commits each) drained 22% slower on
# threads -c 8 with the larger window (312 against 401/s, four pairs), no-op tasks 1.6 times
# faster.
SHORT_TASK_SECONDS = 0.001
# Tasks held that way beyond Celery's bound (4 per process) are a quarter of a second's work
# while the tasks run short; when they run slow, so are the next ones claimed (a queue of
# short tasks followed by slow ones): held this long, three times what they were claimed for,
# they go back to the queue unstarted, for an idle worker, and the task rate is measured
# afresh (see Worker._give_back_excess).
GIVE_BACK_SECONDS = 3 * AHEAD_SECONDS
RATE_WINDOW = 0.1  # seconds: the shortest round of the task rate's moving average
MAX_CLAIM = 500  # tasks per claim statement at most
# The second claim stream (Worker._second_stream) runs where half the prefetch window is at
# least this many tasks: two claims of that size in flight keep the database and the worker
# busy at once (asyncio -c 500, halves of ~250-500 tasks: drains 1.25-1.45x as fast in three
# of four alternating pairs of runs, docs/performance.md); halves of 64 (threads -c 32) cost
# more per task on both sides than the overlap saves (+25 µs of worker and +30 µs of server
# CPU per task, no faster).
OVERLAP_BATCH = 200
UNREGISTER_OUTAGE_WAIT = 2.0  # seconds a stopping worker retries removing its executor row
FINAL_WRITE_WAIT = 30.0  # seconds a stopping worker waits out an outage to write its outcomes
T = TypeVar("T")


def default_executor_id() -> str:
    """Celery's default node name shape: ``pgtasks@<hostname>``."""
    return f"pgtasks@{socket.gethostname()}"


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How one worker process runs."""

    queues: tuple[str, ...] = ("default",)
    concurrency: int = 4
    executor_id: str = ""
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE  # math.inf: wait for the running tasks however long
    # One of pools.POOLS. A worker embedded in a process that must not fork (a test's) says
    # pool="threads".
    pool: str = DEFAULT_POOL
    time_limit: float | None = None
    soft_time_limit: float | None = None
    max_tasks_per_child: int | None = None
    max_memory_per_child: int | None = None  # KiB of resident memory (prefork)
    # Tasks claimed ahead per process (Celery's worker_prefetch_multiplier), so a child that
    # ends a task starts the next at once; the threads and asyncio pools claim ahead within this
    # bound by the task run time (see _ahead). Only where every consumed queue is free of
    # limits: under a global or per-worker limit, or a rate limit, a worker claims exactly its
    # free processes. 1 claims only for idle processes. None (not set): 4, and more while the
    # tasks run short (up to SHORT_TASKS_AHEAD, what the worker finishes in AHEAD_SECONDS).
    prefetch_multiplier: int | None = None
    # The logger of the one line per finished task (a Celery app's worker: "celery.app.trace"),
    # and of the one per task received (a Celery app's: "celery.worker.strategy").
    outcome_logger: str = "pgtasks.worker"
    received_logger: str = "pgtasks.worker"
    # Seconds between two rounds of deleting finished tasks past result_expires.
    prune_interval: float = PRUNE_INTERVAL
    # Told the ids of each batch of outcomes once committed (or given up), off the claim path:
    # a Celery app's django-celery-results mirror (compat/bridge/django_results.py).
    on_committed: Callable[[list[str]], None] | None = None
    # Called with each claimed task before it is handed to the pool, on the claim thread (a
    # Celery app's worker sends task_received from it); an exception is logged, never raised.
    on_received: Callable[[TaskRecord], None] | None = None
    # Told the ids of the tasks this worker (or one of its children) ended as expired, once
    # committed (a Celery app's worker sends task_revoked from it); see WorkerApi.on_expired.
    on_expired: Callable[[list[str]], None] | None = None
    # Told each task whose process the prefork pool killed at its hard time limit, with the
    # TimeLimitExceeded recorded for it, before that failure is written (a Celery app's worker
    # sends task_failure and task_postrun and calls its errbacks there, as Celery's main
    # process does); an exception is logged, never raised.
    on_time_limit: Killed | None = None
    # Answers the application's own remote control commands (a Celery app's @control_command),
    # on the thread that reads the commands; see WorkerControl.
    custom_commands: CustomCommands | None = None
    # The application's settings its report shows (``inspect conf``; a Celery app's conf
    # table without secrets), JSON values; pgtasks' own settings are added over them.
    report_conf: dict[str, Any] | None = None
    # Run in each prefork child as it starts and as it exits on its own (PoolOptions).
    on_child_start: Callable[[], None] | None = None
    on_child_exit: Callable[[int], None] | None = None
    # Called every quarter lease on the maintenance thread while the heartbeat is renewed (a
    # Celery app's worker sends heartbeat_sent, which liveness probes written for Celery touch
    # a file from); never on the heartbeat's own thread, which a slow receiver must not hold.
    on_heartbeat: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigurationError("concurrency must be >= 1")
        if not self.queues:
            raise ConfigurationError("a worker needs at least one queue")
        for queue in self.queues:
            validate_queue_name(queue)
        check_name_length(self.executor_id, "worker name (executor id)")
        if self.pool == "solo" and self.concurrency != 1:
            object.__setattr__(self, "concurrency", 1)  # solo runs one task at a time, as in Celery
        self.pool_options()  # the pool's own checks: its name, limits the pool can enforce
        if self.prefetch_multiplier is not None and self.prefetch_multiplier < 1:
            raise ConfigurationError("prefetch_multiplier must be >= 1")
        if not self.prune_interval > 0 or self.prune_interval == float("inf"):
            raise ConfigurationError("prune_interval must be a positive number of seconds")

    def pool_options(self) -> PoolOptions:
        return PoolOptions(
            self.pool,
            self.concurrency,
            self.time_limit,
            self.soft_time_limit,
            self.max_tasks_per_child,
            self.max_memory_per_child,
            self.on_child_start,
            self.on_child_exit,
            self.on_time_limit,
        )


class Worker:
    """One executor: claims up to its free slots, runs tasks, batches their outcomes."""

    def __init__(self, engine: Engine, options: WorkerOptions) -> None:
        self.engine = engine
        self._store = engine.worker_api
        if options.on_expired is not None:  # set before the pool forks: its children tell it too
            self._store.on_expired = options.on_expired
        self.options = options
        self._outcome_log = logging.getLogger(options.outcome_logger)
        self._received_log = logging.getLogger(options.received_logger)
        self.executor_id = options.executor_id or default_executor_id()
        self.version = engine.version()
        self._running = 0
        self._running_lock = threading.Lock()
        self._finished = 0  # tasks finished since _rate_since (the claim-ahead's task rate)
        self._rate = 0.0
        self._rate_since = time.monotonic()
        self._started: dict[str, float] = {}
        self._size = options.concurrency  # processes or threads; Flower's pool grow/shrink change it
        self._total: dict[str, int] = {}  # tasks received by name (Celery's stats "total")
        self._control: WorkerControl | None = None
        self._hidden: dict[str, tuple[str, ...]] = {}  # secret argument values, by task id
        # Tasks this worker holds: dispatched, and not yet written by the completer.
        self._owned: set[str] = set()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._stop_asked = threading.Event()  # a remote control ``shutdown`` came in
        self._claim_loop_started = False
        self._claim_loop_exited = threading.Event()
        # The second claim stream (see _second_stream): slots promised to claims in flight,
        # its wake-ups (a slot freed; a backlog found by the first stream), its end.
        self._reserved = 0
        self._overlap = False  # half the window is OVERLAP_BATCH or more (see _free_slots)
        self._room = threading.Event()
        self._backlog_found = threading.Event()
        self._streams_end = threading.Event()
        self._second_failed = False
        self._pool = make_pool(engine, self.executor_id, options.pool_options(), self._finish)
        self.info = ExecutorInfo(
            executor_id=self.executor_id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            application_version=self.version,
            queues=options.queues,
            lease_ms=round(engine.settings.lease_seconds * 1000),
            details=json.dumps(self._static_report()),
        )
        self._completer: BatchCompleter | None = None
        self._links: LinkResolver | None = None
        self._lease: LeaseKeeper | None = None
        self._wakeups: WakeOnEnqueue | None = None
        self._pruner: Pruner | None = None
        self._due: DueTimer | None = None
        # Outcomes in the completer's hands that change a due time (a retry with a delay), or
        # free a slot of a queue under a global limit or give a task back unstarted (queue
        # names, announced): acted on once they are committed.
        self._retrying: set[str] = set()
        self._freeing: dict[str, str] = {}
        self.listening = False
        self.queues: QueueBook | None = None
        self._claiming = False  # the last claim reached the database
        self._backlog = False  # the last claim took all it asked for: more tasks are probably waiting
        self.metrics: WorkerMetrics | None = None  # set before start() to count tasks (--metrics-port)

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Register the executor, recover its own unfinished tasks, start the helpers."""
        store = self._store
        _through_outages(self._check_executor_id_free)
        tracing.load_api()  # before the fork: prefork's children inherit the import
        self._pool.start()  # prefork: fork the children before this process starts threads
        self.queues = QueueBook(store, self.options.queues)
        report = _through_outages(self._register)
        if report.requeued:
            log.warning("resuming %d tasks this executor was running when it stopped", len(report.requeued))
        if report.dead_lettered:
            log.error("dead-lettered %d tasks that exceeded max_recovery_attempts", len(report.dead_lettered))
        self._links = self.engine.link_resolver()
        self._completer = BatchCompleter(store, self.executor_id, on_done=self._disown, links=self._links)
        self._completer.carried_by(self._draining)
        self._completer.gathers_while(self._drains_apart)
        self._completer.start()
        self._control = self._worker_control()
        self._lease = LeaseKeeper(store, self.info, self.engine.settings.lease_seconds, self._lease_round)
        self._lease.start()
        _through_outages(self._lease.tick)  # a restart right after the registration is waited out
        self._due = DueTimer(
            store, self.options.queues, self._wake, self.engine.settings.poll_interval, self._listening
        )
        self._due.start()
        # Even where the app keeps results forever: a queue may set an age of its own.
        on_pruned = self.metrics.pruned if self.metrics is not None else None
        self._pruner = Pruner(store, self.options.prune_interval, on_pruned)
        self._pruner.start()
        self._wakeups = WakeOnEnqueue(
            store,
            self.options.queues,
            self._wake,
            self._due.poke,
            command=(store.command_announcement(self.executor_id), self._commanded),
        )
        self.listening = self._wakeups.start()

    def _listening(self) -> bool:
        """Whether enqueues and retries on this worker's queues are heard now (NOTIFY)."""
        return self._wakeups is not None and self._wakeups.listening.is_set()

    def _register(self) -> RecoveryReport:
        """The start-up writes, each safe to repeat: the version, the executor row, the
        declared queues, and the recovery of this executor's unfinished tasks. The commands
        sent to an earlier worker of this name are forgotten first (a shutdown meant for it
        must not stop this one), before the executor row shows this worker alive: a command
        sent once it answers ping is kept."""
        assert self.queues is not None
        self._store.clear_commands(self.executor_id)
        self._store.register_version(self.version)
        self._store.register_executor(self.info)
        self.queues.declare(self.engine.declared_queues)
        return self._store.recover_own(self.executor_id)

    def _lease_round(self) -> None:
        """Runs with every heartbeat: re-read queue settings, give back any PENDING task of this
        executor that it is not running (a claim whose COMMIT reply was lost), and stop the
        running tasks revoked with terminate=True (prefork). Tells ``on_heartbeat`` first,
        while the heartbeat is fresh."""
        assert self.queues is not None
        beat_at = None if self._lease is None else self._lease.beat_at
        fresh = beat_at is not None and time.monotonic() - beat_at <= self.engine.settings.lease_seconds
        if fresh and self.options.on_heartbeat is not None:
            try:
                self.options.on_heartbeat()
            except Exception:
                log.exception("the heartbeat hook raised")
        self.queues.refresh()
        with self._running_lock:
            keep = tuple(self._owned)
        grace = round(max(STRAY_GRACE_SECONDS, self.engine.settings.lease_seconds) * 1000)
        stray = self._store.release_stray(ReleaseStrayParams(self.executor_id, keep, grace))
        if stray:
            log.warning("gave back %d tasks this worker had claimed without knowing it", len(stray))
        self._terminate_revoked(keep)
        if self._control is not None:
            self._control.answer()

    def _commanded(self) -> None:
        """A command announced to this worker (NOTIFY): the revoke of a task it runs with
        terminate=True is announced so too, to stop it now rather than at the next heartbeat."""
        with self._running_lock:
            keep = tuple(self._owned)
        self._terminate_revoked(keep)
        if self._control is not None:
            self._control.answer()

    def _terminate_revoked(self, running: tuple[str, ...]) -> None:
        """Stop those of ``running`` revoked with terminate=True (pools that can)."""
        if running and self._pool.terminates:
            for task_id in self._store.to_terminate(list(running)):
                self._pool.terminate(task_id)

    def _static_report(self) -> dict[str, Any]:
        """The parts of the worker's report that do not change while it runs, written with
        its executor row (so that whoever sees it alive reads them): its tasks and their
        rate limits, the pool, the modules, the database (password masked), its settings."""
        registry = self.engine.registry
        modules = sorted(registry.modules())
        url = self.engine.settings.database_url
        return {
            "registered": sorted(registry.names()),
            "pool": self.options.pool,
            "concurrency": self.options.concurrency,
            # Celery's `inspect stats` pool fields: timeouts [soft, hard], max-tasks-per-child
            "time_limits": [self.options.soft_time_limit, self.options.time_limit],
            "max_tasks_per_child": self.options.max_tasks_per_child,
            "software": "pgtasks",
            "task_options": {
                name: {"rate_limit": rate}
                for name in registry.names()
                if (rate := registry.get(name).options.get("rate_limit"))
            },
            "modules": modules,
            "database": redact_url(url),
            "conf": {**(self.options.report_conf or {}), **inspected_conf(url, modules)},
        }

    def _worker_control(self) -> WorkerControl:
        """The worker's report and its answers to commands (see ``control``)."""
        static = json.loads(self.info.details or "{}")
        return WorkerControl(
            self._store,
            self.executor_id,
            static,
            self._describe,
            self._consume,
            self._stop_consuming,
            self._stop_from_remote,
            self._resize,
            self.options.custom_commands,
        )

    def _arguments(self, record: TaskRecord, hidden: tuple[str, ...]) -> Callable[[], tuple[str, str]]:
        """The task's arguments for its log records, worked out if a handler reads them."""
        codec = self.engine.codec
        return lambda: shown_arguments(codec, record, hidden)

    def _describe(self) -> dict[str, Any]:
        """The moving parts of the worker's report: queues, running and held tasks, the
        processes, and the tasks run by name."""
        snapshot = getattr(self._pool, "snapshot", None)
        with self._running_lock:
            started = list(self._started)
            total = dict(self._total)
        if snapshot is not None:
            running, held, processes = snapshot()
        else:
            running, held, processes = dict.fromkeys(started, os.getpid()), [], [os.getpid()]
        return {
            "concurrency": self._size,
            "prefetch_count": self._size * (self._multiplier() if self._pool.prefetches else 1),
            "queues": list(self.queues.names) if self.queues is not None else list(self.options.queues),
            "running": running,
            "prefetched": held,
            "processes": processes,
            "total": total,
        }

    def _resize(self, delta: int) -> None:
        """Grow or shrink the pool by ``delta`` processes (prefork; Celery's pool_grow/shrink)."""
        resize = getattr(self._pool, "resize", None)
        if resize is None:
            raise ValueError(f"the {self.options.pool} pool keeps the size it starts with (-c)")
        if self._size + delta < 1:
            raise ValueError("Can't shrink pool below one process")
        resize(delta)
        with self._running_lock:
            self._size += delta
        self._wake.set()

    def _consume(self, queue: str) -> bool:
        validate_queue_name(queue)
        assert self.queues is not None
        added = self.queues.consume(queue)
        if self._wakeups is not None:
            self._wakeups.listen_to(self.queues.names)
        self._wake.set()
        return added

    def _stop_consuming(self, queue: str) -> bool:
        assert self.queues is not None
        removed = self.queues.stop_consuming(queue)
        if self._wakeups is not None:
            self._wakeups.listen_to(self.queues.names)
        return removed

    def _disown(self, task_ids: list[str]) -> None:
        """Called by the completer once a batch of outcomes is written (or abandoned)."""
        if self.options.on_committed is not None:
            self.options.on_committed(task_ids)
        with self._running_lock:
            self._owned.difference_update(task_ids)
            retried = bool(self._retrying.intersection(task_ids))
            self._retrying.difference_update(task_ids)
            freed = {self._freeing.pop(t) for t in task_ids if t in self._freeing}
        if retried and self._due is not None:
            self._due.poke()
        if freed:
            # A slot under a global limit is free (a task given back is claimable) only now
            # that the outcome is committed: this worker claims again, and the others hear of
            # it (NOTIFY) at once.
            self._wake.set()
            try:
                self._store.announce(tuple(sorted(freed)))
            except DatabaseUnavailable as exc:  # the others find the slot at their next poll
                log.debug("could not announce freed slots: %s", exc)

    def _check_executor_id_free(self) -> None:
        for other in self._store.executors():
            if other.executor_id != self.executor_id:
                continue
            fresh = self._store.now_ms() - other.last_heartbeat < other.lease_ms
            if (
                fresh
                and (other.hostname != self.info.hostname or _pid_alive(other.pid))
                and other.pid != os.getpid()
            ):
                raise ConfigurationError(
                    f"executor id {self.executor_id!r} is in use by pid {other.pid} on {other.hostname}; "
                    "give each worker its own name with -n/--hostname"
                )

    def run(self) -> None:
        """Claim and run tasks until :meth:`stop` is called.

        A lost database is waited out (see :meth:`_claim_loop`). Any other error ends the
        loop: it is a bug (a statement the database refuses, an error in our code) that
        retrying would repeat forever, so it is logged with its traceback and the process
        stops with exit code 1 (``run_worker`` sees the loop gone and shuts down warm)."""
        self._claim_loop_started = True
        second = None
        if self._pool.adaptive:
            second = threading.Thread(target=self._second_stream, name="pgtasks-claim-2", daemon=True)
            second.start()
        try:
            self._claim_loop()
        except Exception:
            log.critical("claiming failed with an error that retrying cannot fix", exc_info=True)
        finally:
            self._streams_end.set()
            self._backlog_found.set()
            self._room.set()
            if second is not None:  # its claim in flight is dispatched before shutdown counts
                second.join()
            self._claim_loop_exited.set()

    def _claim_loop(self) -> None:
        poll = self.engine.settings.poll_interval
        retry = CLAIM_BACKOFF.retrying()
        outage_since: float | None = None  # time.monotonic() of the first failed claim
        while not self._stopping.is_set():
            # Cleared before claiming: a wake-up (NOTIFY, a freed slot) that arrives while the
            # claim runs is kept and ends the wait below at once.
            self._wake.clear()
            # While tasks are held beyond Celery's bound, look again soon: they may go back.
            idle_wait = min(poll, AHEAD_SECONDS) if self._give_back_excess() else poll
            free = self._gather(self._wake)
            if free == 0:
                self._wake.wait(idle_wait)
                continue
            try:
                claimed = self._claim_into_pool(free)
            except DatabaseUnavailable as exc:  # transient: back off and try again
                pause = retry.next_delay()
                assert pause is not None  # no deadline: the outage is waited out
                if outage_since is None:  # one warning per outage, not one per attempt
                    outage_since = time.monotonic()
                    log.warning("cannot claim tasks, the database is unavailable; retrying: %s", exc)
                else:
                    log.debug("claim failed again, retrying in %.1fs: %s", pause, exc)
                self._claiming = False
                self._stopping.wait(pause)
                continue
            if outage_since is not None:
                log.warning(
                    "claiming again after %.1fs without the database", time.monotonic() - outage_since
                )
                outage_since = None
                retry.reset()
            self._claiming = True
            self._backlog = len(claimed) == free
            if self._backlog:
                self._backlog_found.set()
            if len(claimed) < free:
                self._wake.wait(idle_wait)

    def _second_stream(self) -> None:
        """The second claim stream of the threads and asyncio pools: while a backlog of queues
        without limits drains, a second claim (with the outcomes gathered meanwhile) goes out
        on its own connection while the first is on its way, each for at most half the
        prefetch window, so that the database works on one batch while the worker runs the
        other. The first stream (:meth:`_claim_loop`) does everything else: claims for tasks
        that arrive one by one, limited queues, outages (waited out and reported there; this
        one stops at its first failure until the first finds a backlog again)."""
        poll = self.engine.settings.poll_interval
        try:
            while not self._streams_end.is_set():
                if not (self._overlap and self._draining()):
                    self._backlog_found.wait(poll)
                    self._backlog_found.clear()
                    continue
                self._room.clear()
                free = self._gather(self._room)
                if free == 0:
                    self._room.wait(poll)
                    continue
                try:
                    claimed = self._claim_into_pool(free, unlimited_only=True)
                except DatabaseUnavailable as exc:
                    log.debug("second claim failed; the first stream waits the outage out: %s", exc)
                    claimed = []
                if len(claimed) < free:
                    self._backlog = False
        except Exception:
            log.critical("claiming failed with an error that retrying cannot fix", exc_info=True)
            self._second_failed = True

    def _gather(self, wake: threading.Event) -> int:
        """Reserve the slots of the next claim (0: none free). With a backlog, a slot freed now
        is worth a claim of its own only if no other frees up within a moment: one claim for
        several slots costs less, so it waits up to GATHER_SECONDS (woken by ``wake``) for
        half the window."""
        free, enough = self._free_slots()
        if free == 0:
            return 0
        deadline = time.monotonic() + GATHER_SECONDS
        while self._backlog and free < enough and time.monotonic() < deadline:
            wake.clear()
            wake.wait(max(0.0, deadline - time.monotonic()))
            free, enough = self._free_slots()
        return self._free_slots(reserve=True)[0]

    def _claim_into_pool(self, free: int, unlimited_only: bool = False) -> list[TaskRecord]:
        """Claim up to ``free`` reserved slots and hand the claimed tasks to the pool; the
        reservation ends once they count as in hand. ``unlimited_only``: claim nothing if a
        queue has a limit now (the second stream's claims never count against one)."""
        assert self.queues is not None, "start() first"
        try:
            claims = self.queues.claims()
            if unlimited_only and any(c.is_limited or c.limit is not None for c in claims):
                return []
            claimed = self._claim(ClaimParams(self.executor_id, self.version, claims, free))
            if claimed:
                self._dispatch(claimed, self._recorded_steps(claimed))
            return claimed
        finally:
            with self._running_lock:
                self._reserved -= free

    def _claim(self, params: ClaimParams) -> list[TaskRecord]:
        """Claim, carrying the outcomes gathered so far where every queue is free of limits
        (one statement: see ``tasks_complete_claim``). Outcomes the statement could not
        write go back to the completer, which writes them on its own."""
        carry = self._completer.take() if self._completer is not None and self._draining() else []
        if not carry:
            return self._store.claim(params)
        assert self._completer is not None
        try:
            written, claimed = self._store.complete_and_claim(
                CompleteParams(self.executor_id, tuple(carry), self._links), params
            )
        except Exception as exc:
            self._completer.give_back(carry)
            if isinstance(exc, DatabaseUnavailable):
                raise
            # Refused, not lost (an outcome the database cannot store): the completer writes
            # them one by one and says which; the claim goes alone.
            log.debug("outcomes refused with a claim (%s): written apart", type(exc).__name__)
            return self._store.claim(params)
        self._completer.written(carry, written)
        return claimed

    def _draining(self) -> bool:
        """Whether the worker drains a backlog of queues without limits on an adaptive pool: the
        claims then carry outcomes (the completer leaves them to them) and the second claim
        stream claims too (see _second_stream). A claim for a task that just arrived goes
        alone, committed without waiting for a flush (the start-latency path); the completer
        writes the outcomes then. Not on prefork: its parent claims a few tasks at a time (the
        children's prefetch), and each of those claims would wait for the outcomes' flush
        (measured: the no-op drain at 0.6 of the claims without it)."""
        return (
            self._pool.adaptive
            and self._claiming
            and self._backlog
            and not self._stopping.is_set()
            and self.queues is not None
            and self.queues.unlimited()
        )

    def _drains_apart(self) -> bool:
        """Whether the worker drains a backlog without carrying outcomes in its claims (prefork,
        solo): the completer then gathers them longer, into fewer statements."""
        return (
            not self._pool.adaptive
            and self._claiming
            and self._backlog
            and not self._stopping.is_set()
            and self.queues is not None
            and self.queues.unlimited()  # an outcome frees a slot of a limited queue when written
        )

    def _free_slots(self, reserve: bool = False) -> tuple[int, int]:
        """How many tasks to claim now, and how many are worth gathering for one claim (see
        _gather). The window: the free processes or threads, and where the pool prefetches
        the prefetch beyond them (see WorkerOptions.prefetch_multiplier), less the tasks in
        hand and the slots reserved by claims in flight. Where the second claim stream runs
        (adaptive pools, no limits, a window of twice OVERLAP_BATCH or more), one claim takes
        at most half the window (or the pool's size), leaving the other half to the other
        stream. ``reserve``: reserve the slots for the caller's claim (released by
        _claim_into_pool)."""
        if self._pool.replace_process:  # the process is about to be replaced: nothing new
            return 0, 0
        capacity, overlap = self._size, False
        if self._pool.prefetches and self.queues is not None and self.queues.unlimited():
            capacity += self._ahead()
            overlap = self._pool.adaptive and capacity // 2 >= OVERLAP_BATCH
        self._overlap = overlap
        most = max(self._size, capacity // 2) if overlap else capacity
        with self._running_lock:
            free = min(MAX_CLAIM, most, max(0, capacity - self._running - self._reserved))
            if reserve:
                self._reserved += free
        return free, min(MAX_CLAIM, max(1, capacity // 2))

    def _multiplier(self) -> int:
        """The prefetch multiplier: the one given, else Celery's default."""
        return self.options.prefetch_multiplier or DEFAULT_PREFETCH_MULTIPLIER

    def _ahead(self) -> int:
        """How many tasks to hold beyond the pool's size (where no queue has limits). A
        multiplier given is a bound, as Celery's: adaptive pools hold within it what they
        finish in AHEAD_SECONDS, prefork all of it. Without one, the default multiplier is that
        bound too, except while the pool's tasks run short (SHORT_TASK_SECONDS): then adaptive
        pools hold what they finish in AHEAD_SECONDS within the larger of that bound and
        SHORT_TASKS_AHEAD, prefork that bound or what it finishes in AHEAD_SECONDS (at most
        SHORT_TASKS_AHEAD)."""
        bound = self._size * (self._multiplier() - 1)
        recent = self._pool.recent_task_seconds()
        if self.options.prefetch_multiplier is not None or recent is None or recent > SHORT_TASK_SECONDS:
            if self._pool.adaptive:
                return min(bound, int(self._task_rate() * AHEAD_SECONDS))
            return bound
        finished = int(self._task_rate() * AHEAD_SECONDS)
        if self._pool.adaptive:
            return min(max(bound, SHORT_TASKS_AHEAD), finished)
        return max(bound, min(SHORT_TASKS_AHEAD, finished))

    def _give_back_excess(self) -> bool:
        """Without a multiplier, give back the tasks held beyond Celery's bound (4 per process)
        that waited GIVE_BACK_SECONDS, unstarted (see Pool.give_back), and measure the task
        rate afresh: the window they were claimed in assumed short tasks. Whether tasks are
        still held beyond the bound."""
        if self.options.prefetch_multiplier is not None or not self._pool.prefetches:
            return False
        excess = self._in_hand() - self._size * DEFAULT_PREFETCH_MULTIPLIER
        if excess <= 0:
            return False
        given = self._pool.give_back(excess, GIVE_BACK_SECONDS)
        if given:
            with self._running_lock:
                self._rate, self._finished, self._rate_since = 0.0, 0, time.monotonic()
            log.info(
                "gave back %d tasks that waited here beyond %d per process",
                given,
                DEFAULT_PREFETCH_MULTIPLIER,
            )
        return given < excess

    def _task_rate(self) -> float:
        """Tasks finished per second: a moving average over rounds of at least RATE_WINDOW
        seconds, started afresh after a pause (0 until the first round ends)."""
        now = time.monotonic()
        with self._running_lock:
            elapsed = now - self._rate_since
            if elapsed >= RATE_WINDOW:
                current = self._finished / elapsed
                self._rate = current if elapsed > 10 * RATE_WINDOW else (self._rate + current) / 2
                self._finished, self._rate_since = 0, now
            return self._rate

    def _recorded_steps(self, claimed: list[TaskRecord]) -> dict[str, list[StepRecord]]:
        """Checkpoints of the claimed tasks, in one query for those that have any (a task with
        a history is one being resumed, forked or recovered). On a database error each task
        loads its own, with retries, when it starts."""
        steps: dict[str, list[StepRecord]] = {r.task_id: [] for r in claimed if r.has_steps is False}
        unknown = [r.task_id for r in claimed if r.has_steps is not False]
        if not unknown:
            return steps
        try:
            return {**steps, **self._store.recorded_steps(unknown)}
        except DatabaseUnavailable:
            return steps

    def _dispatch(self, claimed: list[TaskRecord], steps: dict[str, list[StepRecord]]) -> None:
        """Hand a claimed batch to the pool: the bookkeeping once per batch where it can be,
        then the whole batch at once where the pool takes batches."""
        registry = self.engine.registry
        with self._running_lock:
            self._running += len(claimed)
            self._owned.update(r.task_id for r in claimed)
            for record in claimed:
                if record.name in registry:  # Celery's stats count the tasks it accepts
                    self._total[record.name] = self._total.get(record.name, 0) + 1
        if self.queues is not None:
            for queue, count in collections.Counter(r.queue_name for r in claimed).items():
                self.queues.started(queue, count)
        received = self._received_log.isEnabledFor(logging.INFO)
        with_args = self.engine.settings.log_task_args
        on_received = self.options.on_received
        now = time.monotonic()
        for record in claimed:
            crashpoint("after_claim_commit", task_id=record.task_id)
            shown = record.inputs
            secrets = secret_args_of(registry, record.name)
            if secrets is not None:  # read only for tasks that declare secret_args
                shown, hidden = masked_inputs(
                    self.engine.codec, secrets, record.serialization, record.inputs, record.name
                )
                if hidden:
                    self._hidden[record.task_id] = hidden
            if received:
                hidden = self._hidden.get(record.task_id, ())
                name = sender_named(record.name, record.meta)
                data = TaskLogData(record.task_id, name, self._arguments(record, hidden), inputs=shown)
                line = LOG_RECEIVED_INPUTS if with_args else LOG_RECEIVED
                log_task(self._received_log, logging.INFO, line, data)
            if on_received is not None:
                try:
                    on_received(record)
                except Exception:  # a receiver's failure must not stop the task or the worker
                    log.exception("the received hook failed for task %s", record.task_id)
            self._started[record.task_id] = now
            if self.metrics is not None:
                self.metrics.started(record)
        batch = [(record, steps.get(record.task_id)) for record in claimed]
        submit_many = getattr(self._pool, "submit_many", None)
        if submit_many is not None:
            try:
                submit_many(batch)
                return
            except Exception:  # the pool could not take them: give them back, keep claiming
                log.exception("could not start %d tasks; releasing them", len(batch))
                for record, _ in batch:
                    self._finish(record, _released(record))
                return
        for record, recorded in batch:
            try:
                self._pool.submit(record, recorded)
            except Exception:  # the pool could not take it: give the task back, keep claiming
                log.exception("could not start task %s; releasing it", record.task_id)
                self._finish(record, _released(record))

    def _finish(self, record: TaskRecord, outcome: Outcome | None) -> None:
        """Called by the pool when a task's body is done (on a pool thread)."""
        try:
            reopen_closed(record.name)
            elapsed = time.monotonic() - self._started.pop(record.task_id, time.monotonic())
            hidden = self._hidden.pop(record.task_id, ())
            _log_outcome(self._outcome_log, record, outcome, elapsed, hidden, self._arguments(record, hidden))
            if self.metrics is not None:
                self.metrics.finished(record, outcome, elapsed)
            if outcome is not None and outcome.status is Status.DELAYED:
                self._disown([record.task_id])  # suspended: its row is written already
                if self._due is not None:
                    self._due.poke()  # its wake-up time may be the next one due here
            elif outcome is not None and self._completer is not None:
                self._note_effects(record, outcome)
                if record.has_links:  # its links are resolved in the outcome's transaction
                    outcome = dataclasses.replace(outcome, has_links=True)
                self._completer.submit(outcome)
            else:
                self._disown([record.task_id])
        finally:
            if self.queues is not None:
                self.queues.finished(record.queue_name)
            with self._running_lock:
                self._running -= 1
                self._finished += 1
            # Set only when not set already (no lock, no notify): most finishes of a drain
            # find them set, and a waiter clears one before it reads the counts updated above.
            if not self._wake.is_set():
                self._wake.set()
            if not self._room.is_set():
                self._room.set()

    def _note_effects(self, record: TaskRecord, outcome: Outcome) -> None:
        """Remember what to do once this outcome is committed (see :meth:`_disown`). A task
        given back unstarted is announced like a freed slot: idle workers take it at once."""
        limited = outcome.unstarted or (
            self.queues is not None and self.queues.globally_limited(record.queue_name)
        )
        with self._running_lock:
            if outcome.retry_in_ms is not None:
                self._retrying.add(record.task_id)
            if limited:
                self._freeing[record.task_id] = record.queue_name

    def broken_part(self, claim_loop: threading.Thread) -> str | None:
        """What of this worker stopped on its own (the claim loop, the pool), or None. A
        claim loop ended by :meth:`stop` did not stop on its own."""
        if (not claim_loop.is_alive() and not self._stopping.is_set()) or self._second_failed:
            return "claim loop stopped unexpectedly"
        if self._pool.replace_process:
            return f"{self.options.pool} pool is blocked past a hard time limit: the process will be replaced"
        if not self._pool.alive():
            return f"{self.options.pool} pool stopped unexpectedly"
        return None

    @property
    def replace_process(self) -> bool:
        """True when this process must be replaced once stopped (a thread it cannot stop)."""
        return self._pool.replace_process

    def alive(self) -> str | None:
        """None while the heartbeat is fresh (within the lease), else why not (probes)."""
        beat_at = None if self._lease is None else self._lease.beat_at
        return fresh(beat_at, self.engine.settings.lease_seconds, "heartbeat")

    def ready(self) -> str | None:
        """None while alive and claiming from the database, else why not (probes)."""
        if self._stopping.is_set():
            return "shutting down"
        if not self._claiming:
            return "not claiming: the database is unreachable or the worker is starting"
        return self.alive()

    def running(self) -> int:
        """How many tasks are executing now (not counting prefetched ones still waiting)."""
        return max(0, self._in_hand() - self._pool.waiting())

    def _in_hand(self) -> int:
        """Tasks claimed and not yet finished: running, or prefetched and waiting."""
        with self._running_lock:
            return self._running

    def abort(self) -> None:
        """Cold shutdown: kill child processes now; running tasks are recovered later."""
        self._pool.shutdown(wait=False)

    def stop(self) -> None:
        """Stop claiming (the run loop returns); running tasks go on."""
        self._stopping.set()
        self._wake.set()

    def _stop_from_remote(self) -> None:
        """Remote control ``shutdown``: stop claiming now, and let the process that runs this
        worker see :attr:`shutdown_asked` and shut down warm (exit status 0, as Celery's)."""
        self._stop_asked.set()  # before stop(): the process never sees the loop end unasked
        self.stop()

    @property
    def shutdown_asked(self) -> bool:
        """True once a remote control ``shutdown`` asked this worker to stop."""
        return self._stop_asked.is_set()

    def shutdown(self, grace: float | None = None) -> bool:
        """Warm shutdown: wait up to ``grace`` seconds for running tasks, write their
        outcomes, leave. Tasks still running after that are recovered by the next worker.
        Returns True if every task finished."""
        self.stop()
        grace = self.options.shutdown_grace if grace is None else grace
        deadline = time.monotonic() + grace
        if self._claim_loop_started:  # a claim in flight dispatches before we count what runs
            while not self._claim_loop_exited.wait(0.05) and time.monotonic() < deadline:
                if not self._in_hand():
                    # Nothing to write: a claim waiting out an outage must not hold the stop
                    # for the whole grace period (nor its retries for PGTASKS_RECONNECT_DEADLINE).
                    self._store.limit_outage_wait(UNREGISTER_OUTAGE_WAIT)
        self._pool.release_waiting()  # prefetched tasks go back for others, as Celery's do
        while self._in_hand() and time.monotonic() < deadline:
            self._wake.wait(0.05)
            self._wake.clear()
        finished = self._in_hand() == 0

        def left() -> float:
            # What is left to write (outcomes, the executor row) waits out an outage only for
            # what remains of the grace period, and never longer than FINAL_WRITE_WAIT (a grace
            # without end, a Celery app's): tasks not written are recovered by the next worker.
            return max(1.0, min(deadline - time.monotonic(), FINAL_WRITE_WAIT))

        self._store.limit_outage_wait(left())
        self._pool.shutdown(wait=finished)
        if self._completer is not None:
            self._completer.stop(timeout=left())
        if self._lease is not None:
            self._lease.stop()
        if self._due is not None:
            self._due.stop()
        if self._pruner is not None:
            self._pruner.stop()
        if self._wakeups is not None:
            self._wakeups.stop()
        if finished:
            # Only a courtesy (the row expires with its lease): not worth waiting out an outage.
            self._store.limit_outage_wait(UNREGISTER_OUTAGE_WAIT)
            try:
                self._store.unregister_executor(self.executor_id)
            except DatabaseUnavailable as exc:  # the row expires with its lease instead
                log.warning("could not remove executor %s: %s", self.executor_id, exc)
        return finished


def _log_outcome(
    log: logging.Logger,
    record: TaskRecord,
    outcome: Outcome | None,
    elapsed: float,
    hidden: tuple[str, ...],
    arguments: Callable[[], tuple[str, str]],
) -> None:
    """One record per finished task, in Celery's words: its result's repr on success, the
    error's ``Type('message')`` and its traceback (never local variables) on failure, with the
    values of secret arguments scrubbed out of all of them. Each record's ``data`` holds the
    task's id, name, arguments and the line's fields (see TaskLogData)."""

    def data(**fields: Any) -> TaskLogData:
        name = sender_named(record.name, record.meta)  # a Celery shadow name, as its lines show it
        return TaskLogData(record.task_id, name, arguments, runtime=elapsed, **fields)

    if outcome is None:
        log_task(log, logging.WARNING, LOG_ABANDONED, data())
    elif outcome.status is Status.SUCCESS:
        if log.isEnabledFor(logging.INFO):
            shown = scrub(result_repr(outcome.output), hidden)
            log_task(log, logging.INFO, LOG_SUCCESS, data(return_value=shown))
    elif outcome.retry_in_ms is not None:
        countdown = outcome.retry_in_ms / 1000
        shown = scrub(retry_repr(outcome.error, countdown), hidden)
        log_task(log, logging.INFO, LOG_RETRY, data(countdown=countdown, exc=shown))
    elif outcome.status is Status.DELAYED:
        log_task(log, logging.INFO, LOG_WAITS, data())
    elif outcome.status is Status.ENQUEUED:
        # Given back before it started (a warm shutdown, tasks held too long): nothing is lost.
        log_task(log, logging.INFO if outcome.unstarted else logging.WARNING, LOG_RELEASED, data())
    else:
        shown, traceback = error_repr(outcome.error)
        if is_expected(outcome.error):  # declared by its task (Celery's throws): no traceback
            log_task(
                log, logging.INFO, LOG_FAILURE, data(description="raised expected", exc=scrub(shown, hidden))
            )
            return
        traceback = None if traceback is None else scrub(traceback, hidden)
        failure = data(description="raised unexpected", exc=scrub(shown, hidden))
        log_task(log, logging.ERROR, LOG_FAILURE, failure, traceback)


def shown_arguments(codec: Any, record: TaskRecord, hidden: tuple[str, ...]) -> tuple[str, str]:
    """A task's arguments as its log records show them: as its sender asked (``argsrepr`` and
    ``kwargsrepr`` stored with it, Celery's way to hide sensitive arguments), else the reprs of
    the stored arguments, secret values scrubbed."""
    args_shown, kwargs_shown = sender_shown(record.meta)
    if args_shown is None or kwargs_shown is None:
        try:
            args, kwargs = codec.loads_inputs(record.serialization, record.inputs, record.name)
            decoded = (repr(tuple(args)), repr(dict(kwargs)))
        except Exception:  # unreadable here: shown as stored
            decoded = (record.inputs, "{}")
        args_shown = decoded[0] if args_shown is None else args_shown
        kwargs_shown = decoded[1] if kwargs_shown is None else kwargs_shown
    return scrub(clip(str(args_shown)), hidden), scrub(clip(str(kwargs_shown)), hidden)


def _released(record: TaskRecord) -> Outcome:
    """The outcome that gives back a task the pool could not take."""
    return Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token)


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs. A zombie (killed, not yet reaped by its
    parent: a supervisor restarting a SIGKILLed worker before it waits for it) does not, so
    its executor id is taken over at once rather than after its lease. Only asked for an
    executor registered with this host's name: two hosts (containers) sharing a host name
    would be told apart by nothing, and an id in use there could be taken over here."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and waits to be reaped (Linux: state Z in /proc/PID/stat,
    the field after the command name in parentheses); False where /proc is missing."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return False
    return fields[:1] == ["Z"]


def _through_outages(step: Callable[[], T]) -> T:
    """Run a start-up ``step`` that is safe to repeat, waiting out a database outage that
    begins after the start-up wait found the database (a restart in the middle of a worker's
    start): retried with backoff for up to START_OUTAGE_SECONDS, then DatabaseUnavailable."""
    retry = CLAIM_BACKOFF.retrying(within=START_OUTAGE_SECONDS)
    while True:
        try:
            return step()
        except DatabaseUnavailable as exc:
            pause = retry.next_delay()
            if pause is None:
                raise
            if retry.failures == 1:
                log.warning("the database went away while the worker was starting; retrying: %s", exc)
            time.sleep(pause)
