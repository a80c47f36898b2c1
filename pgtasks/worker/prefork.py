"""The prefork pool: child processes, each with its own database connections; the parent
kills a child that passes the hard time limit (recording TimeLimitExceeded) and replaces it,
and replaces children after ``max_tasks_per_child`` tasks. The soft time limit raises
SoftTimeLimitExceeded inside the task (SIGALRM in the child). It takes more tasks than it has
children (the worker's prefetch) and hands each to the next child that is free.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import multiprocessing
import operator
import os
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import (
    DatabaseUnavailable,
    SoftTimeLimitExceeded,
    TimeLimitExceeded,
    WorkerLostError,
)
from pgtasks.engine.failures import encode_exception
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord
from pgtasks.worker.forkserver import ForkedChild, ForkServer, ForkServerError
from pgtasks.worker.limits import time_limits
from pgtasks.worker.pools import Finish, PoolOptions, run_guarded

log = logging.getLogger("pgtasks.worker")


@dataclass
class _Child:
    process: ForkedChild
    conn: Connection
    task: TaskRecord | None = None
    started: float = 0.0
    retiring: bool = False  # exiting (max_tasks_per_child) or dead: takes no task
    limit: float | None = None  # the hard time limit of its task, in seconds


@dataclass(frozen=True, slots=True)
class _Held:
    """A task submitted while every child was busy: it starts on the next free child."""

    record: TaskRecord
    steps: list[StepRecord] | None
    since: float  # time.monotonic() when it was submitted


# A task that waited longer than this for a child is checked before it runs: it may have been
# revoked (or its lease lost) meanwhile, and must not run then.
HELD_CHECK_SECONDS = 0.5

# Records and outcomes cross the pipes as tuples of their fields: pickling the dataclasses
# themselves costs several times more, on both sides, for every task.
_record_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(TaskRecord)))
_outcome_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(Outcome)))


class PreforkPool:
    """``-P prefork``: child processes forked by a fork server (see above)."""

    prefetches = True  # submitted tasks wait for the next free child
    terminates = True  # a running child is killed
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._options, self._finish = engine, executor_id, options, finish
        self._forks = ForkServer(self._child_main)
        self._children: list[_Child] = []
        self._held: collections.deque[_Held] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = False
        self._terminating: set[str] = set()  # task ids to kill (revoked with terminate=True)
        self._broken: ForkServerError | None = None  # the fork server is gone
        self._wake_read, self._wake_write = Pipe(duplex=False)
        self._monitor = threading.Thread(target=self._watch, name="pgtasks-prefork", daemon=True)
        self._spawned = 0  # children started so far: the next is ForkPoolWorker-<n+1>, as in Celery
        self._shrinking = 0  # children asked to exit by resize(): not replaced

    def start(self) -> None:
        # The fork server is forked before the worker starts its other threads, and with no
        # database connection open: SQLite keeps per-process lock state for each open file
        # that a child would inherit as if it were its own. The worker reconnects on next use.
        self._engine.close()
        self._forks.start()
        with self._lock:
            self._children = [self._spawn() for _ in range(self._options.size)]
        self._monitor.start()

    def _spawn(self) -> _Child:
        process, conn = self._forks.spawn()
        self._spawned += 1
        conn.send(f"ForkPoolWorker-{self._spawned}")  # the child's first message: its name
        return _Child(process, conn)

    def _child_main(self, conn: Connection) -> None:
        self._wake_read.close()  # the pool's own pipe: not the child's
        self._wake_write.close()
        _child_main(conn, self._engine, self._executor_id, self._options)

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        with self._lock:
            child = self._idle_child()
            if child is None:  # every child is busy: the next one free takes it
                self._held.append(_Held(record, steps, time.monotonic()))
                return
            # OSError: it died a moment ago; the caller gives the task back, not us
            limited = self._send(child, _Held(record, steps, time.monotonic()))
        if limited:
            self._wake_write.send(None)  # the monitor watches this child's time from now on

    def _idle_child(self) -> _Child | None:
        return next((c for c in self._children if c.task is None and not c.retiring), None)

    def _send(self, child: _Child, held: _Held) -> bool:
        """Start ``held`` on the idle ``child`` (the lock held); True when it has a hard time
        limit. A child found dead is marked retiring (its death is handled by the monitor)
        and OSError raised, with the task not taken."""
        record = held.record
        hard, soft = time_limits(
            self._engine, record, self._options.time_limit, self._options.soft_time_limit
        )
        child.task, child.started, child.limit = record, time.monotonic(), hard
        check = child.started - held.since > HELD_CHECK_SECONDS
        try:
            child.conn.send((_record_fields(record), held.steps, soft, check))
        except OSError:
            child.task, child.retiring = None, True
            raise
        return hard is not None

    def _feed(self) -> None:
        """Start held tasks on the idle children (monitor thread)."""
        with self._lock:
            while self._held and not self._stopping:
                child = self._idle_child()
                if child is None:
                    return
                held = self._held.popleft()
                try:
                    self._send(child, held)
                except OSError:
                    self._held.appendleft(held)  # the next idle child takes it

    def waiting(self) -> int:
        with self._lock:
            return len(self._held)

    def resize(self, delta: int) -> None:
        """Start ``delta`` more children, or stop ``-delta`` idle ones (Celery's pool_grow and
        pool_shrink); ValueError when fewer are idle."""
        with self._lock:
            if delta > 0:
                self._children.extend(self._spawn() for _ in range(delta))
            else:
                idle = [c for c in self._children if c.task is None and not c.retiring]
                if len(idle) < -delta:
                    raise ValueError("Can't shrink pool. All processes busy!")
                for child in idle[:-delta]:
                    child.retiring = True
                    self._shrinking += 1
                    with contextlib.suppress(OSError):  # dead already: replaced as usual
                        child.conn.send(None)
        self._wake_write.send(None)  # the monitor watches the new children, or the exits

    def snapshot(self) -> tuple[dict[str, int], list[str], list[int]]:
        """(the running task ids with the pid of the child running each, the ids of the
        tasks held for a free child, the pids of the children), for the worker's report."""
        with self._lock:
            running = {c.task.task_id: c.process.pid for c in self._children if c.task is not None}
            return running, [h.record.task_id for h in self._held], [c.process.pid for c in self._children]

    def release_waiting(self) -> None:
        with self._lock:
            held, self._held = list(self._held), collections.deque()
        for task in held:
            self._finish(task.record, _unstarted(task.record))

    def alive(self) -> bool:
        return self._monitor.is_alive() or self._stopping

    def _watch(self) -> None:
        try:
            self._watch_children()
        except Exception as exc:  # a bug: without its monitor the pool runs nothing more
            log.exception("the prefork pool's monitor failed")
            self._give_up(exc)

    def _watch_children(self) -> None:
        while True:
            if self._broken is not None:
                self._give_up(self._broken)
                return
            with self._lock:
                if self._stopping and all(c.task is None for c in self._children):
                    return
                conns = [c.conn for c in self._children]
                limited = [c for c in self._children if c.task is not None and c.limit is not None]
            timeout = 0.5
            if limited:
                deadline = min(c.started + (c.limit or 0.0) for c in limited)
                timeout = min(timeout, max(0.0, deadline - time.monotonic()))
            ready = wait([*conns, self._wake_read], timeout)
            if self._wake_read in ready:
                while self._wake_read.poll():
                    self._wake_read.recv()
            for child in list(self._children):
                if child.conn in ready:
                    self._receive(child)
            if self._terminating:
                self._terminate_requested()
            for child in list(self._children):
                limit = child.limit
                if child.task is not None and limit is not None and time.monotonic() - child.started >= limit:
                    self._kill_for_time_limit(child, limit)
            if self._held:
                self._feed()

    def _receive(self, child: _Child) -> None:
        try:
            fields, retiring = child.conn.recv()
        except (EOFError, OSError):
            self._child_died(child)
            return
        outcome = None if fields is None else Outcome(*fields)
        with self._lock:
            task, child.task = child.task, None
            child.retiring = retiring
            if self._stopping and not retiring:
                with contextlib.suppress(OSError):  # killed already by a cold shutdown
                    child.conn.send(None)  # warm shutdown: this child is done
        if retiring:
            # Its successor is forked before the slot is reported free, so the worker never
            # claims a task that no idle child could take.
            child.process.forget()
            self._replace(child)
        if self._held:  # the next task starts before this one's outcome is handled
            self._feed()
        if task is not None:
            self._finish(task, outcome)

    def _give_up(self, error: Exception) -> None:
        """Without its fork server no child can be replaced: give back the tasks of the
        children left (they die with the server) and stop. The worker sees the monitor gone
        (alive() is False), shuts down and exits non-zero, for a supervisor to restart it."""
        log.critical("the prefork pool cannot start child processes any more: %s", error)
        with self._lock:
            left, self._children = self._children, []
            held, self._held = list(self._held), collections.deque()
        for task in held:
            self._finish(task.record, _unstarted(task.record))
        for child in left:
            child.process.kill()
            child.conn.close()
            if child.task is not None:
                self._give_back(child.task, child.process.exitcode)

    def _give_back(self, task: TaskRecord, code: int | None) -> None:
        log.error("the process running task %s died (exit code %s); it will run again", task.task_id, code)
        # Given back rather than failed: the death counts as an attempt, so a task that keeps
        # killing its process ends in MAX_RECOVERY_ATTEMPTS_EXCEEDED.
        lost = encode_exception(WorkerLostError(f"process exited with code {code}"))
        self._finish(task, Outcome(task.task_id, Status.ENQUEUED, error=lost, claim_token=task.claim_token))

    def _child_died(self, child: _Child) -> None:
        with self._lock:  # from now on submit() passes it by, so its task is the one read here
            child.retiring = True
            task = child.task
        child.process.join(timeout=5)
        code = child.process.exitcode
        self._replace(child)
        if task is not None:
            self._give_back(task, code)

    def terminate(self, task_id: str) -> bool:
        # The monitor thread kills the child: it is the only one that replaces children, so
        # a kill cannot race with it noticing the same child's death.
        with self._lock:
            held = next((h for h in self._held if h.record.task_id == task_id), None)
            if held is not None:
                self._held.remove(held)
            elif not any(c.task is not None and c.task.task_id == task_id for c in self._children):
                return False
            else:
                self._terminating.add(task_id)
        if held is not None:  # it never started: nothing to stop, and the row is CANCELLED
            log.warning("Task %s[%s] revoked before it started", held.record.name, task_id)
            self._finish(held.record, None)
            return True
        self._wake_write.send(None)
        return True

    def _terminate_requested(self) -> None:
        with self._lock:
            wanted, self._terminating = self._terminating, set()
            doomed = [c for c in self._children if c.task is not None and c.task.task_id in wanted]
        for child in doomed:
            task = child.task
            child.process.kill()
            child.process.join(timeout=5)
            self._replace(child)
            if task is not None:
                log.warning("Task %s[%s] terminated (revoked with terminate=True)", task.name, task.task_id)
                self._finish(task, None)  # the row is CANCELLED already: nothing to write

    def _kill_for_time_limit(self, child: _Child, limit: float) -> None:
        task = child.task
        child.process.kill()
        child.process.join(timeout=5)
        self._replace(child)
        if task is not None:
            log.error(
                "Task %s[%s] passed its hard time limit of %gs; its process was killed",
                task.name,
                task.task_id,
                limit,
            )
            error = encode_exception(TimeLimitExceeded(f"task ran longer than its time limit of {limit:g}s"))
            self._finish(task, Outcome(task.task_id, Status.ERROR, error=error, claim_token=task.claim_token))

    def _replace(self, child: _Child) -> None:
        with self._lock:
            child.conn.close()
            index = self._children.index(child)
            self._children.pop(index)
            if self._stopping or self._broken is not None:
                return
            if self._shrinking:  # asked to exit by resize()
                self._shrinking -= 1
                return
            try:
                self._children.insert(index, self._spawn())
            except ForkServerError as exc:
                self._broken = exc  # the monitor gives up at the top of its next round

    def shutdown(self, wait: bool) -> None:
        if wait:
            self.release_waiting()
        with self._lock:
            self._stopping = True
            children = list(self._children)
        for child in children:
            if child.task is None or not wait:
                with contextlib.suppress(OSError):
                    child.conn.send(None)
        self._wake_write.send(None)
        if not wait:
            for child in children:
                child.process.kill()
        for child in children:
            child.process.join(timeout=10)
        self._forks.close()


def _child_main(conn: Connection, engine: Engine, executor_id: str, options: PoolOptions) -> None:
    """A prefork child: run the tasks the parent sends, one at a time, and send back outcomes."""
    signal.set_wakeup_fd(-1)  # the parent's wake-up pipe is not ours
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent coordinates shutdown
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    engine.forget_connections()  # the parent's sockets must not be used (or closed) here
    signal.signal(signal.SIGALRM, _soft_limit_reached)
    try:
        # processName in log records, Celery's name for a pool process
        multiprocessing.current_process().name = conn.recv()
    except (EOFError, OSError):
        os._exit(0)
    done = 0
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if message is None:
            os._exit(0)
        fields, steps, soft_limit, check = message
        record = TaskRecord(*fields)
        if check and (not _still_ours(engine, record, executor_id) or _expired(engine, record, executor_id)):
            conn.send((None, False))  # revoked, taken over or expired while it waited: not run
            continue
        if soft_limit is not None:
            signal.setitimer(signal.ITIMER_REAL, soft_limit)
        try:
            outcome = run_guarded(engine, record, executor_id, steps)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        done += 1
        retiring = options.max_tasks_per_child is not None and done >= options.max_tasks_per_child
        conn.send((None if outcome is None else _outcome_fields(outcome), retiring))
        if retiring:
            os._exit(0)


def _still_ours(engine: Engine, record: TaskRecord, executor_id: str) -> bool:
    """Whether this executor still holds ``record`` (read before running a task that waited
    for a child); a database error counts as yes: the fence on its outcome still holds."""
    try:
        return engine.worker_api.owns(record.task_id, executor_id, record.claim_token)
    except DatabaseUnavailable:
        return True


def _expired(engine: Engine, record: TaskRecord, executor_id: str) -> bool:
    """Whether ``record``'s expiry passed while it waited for a child (it is then ended as
    expired); a database error counts as no. A task without an expiry costs no round trip."""
    if record.expires_at_epoch_ms is None:
        return False
    try:
        return engine.worker_api.expire_claimed(record, executor_id)
    except DatabaseUnavailable:
        return False


def _unstarted(record: TaskRecord) -> Outcome:
    return Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token, unstarted=True)


def _soft_limit_reached(_signum: int, _frame: object) -> None:
    raise SoftTimeLimitExceeded("task ran past its soft time limit")
