"""The prefork pool: child processes, each with its own database connections; the parent
kills a child that passes the hard time limit (recording TimeLimitExceeded) and replaces it,
and replaces children after ``max_tasks_per_child`` tasks. The soft time limit raises
SoftTimeLimitExceeded inside the task (SIGALRM in the child). It takes more tasks than it has
children (the worker's prefetch) and holds them until a child is free.

A free child takes the next held task; when many are held and that task name's recent run
time is short, it takes a **micro-batch** of them (at most :data:`MICRO_BATCH_SIZE` tasks and
about :data:`MICRO_BATCH_SECONDS` of expected work, by a moving average of each name's run
time), in one message: the hand-off costs a pickle and a write per batch, not per task. The
child sends each outcome back as soon as its task is done, and writes which task of its batch
it runs, and since when, into its shared slot (:mod:`pgtasks.worker.prefork_slots`): the
parent enforces hard time limits and ``terminate`` from there, and when it kills a child, or
a child dies, it knows which task was in progress (recorded as today) and gives the rest of
the batch back unstarted, once. The child's loop and messages are in
:mod:`pgtasks.worker.prefork_child`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import os
import select
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, ClassVar

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import TimeLimitExceeded, WorkerLostError
from pgtasks.engine.failures import encode_exception
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord
from pgtasks.worker.forkserver import ForkedChild, ForkServer, ForkServerError
from pgtasks.worker.held import give_back_stale, unstarted
from pgtasks.worker.limits import time_limits
from pgtasks.worker.pools import Finish, PoolOptions
from pgtasks.worker.prefork_child import MessageReader, child_main, outcome_of, record_fields
from pgtasks.worker.prefork_slots import Slots

log = logging.getLogger("pgtasks.worker")

# A micro-batch: at most this many tasks, and about this much expected work (a task name
# whose run time is not known yet goes alone).
MICRO_BATCH_SIZE = 16
MICRO_BATCH_SECONDS = 0.005
RUN_TIME_WEIGHT = 0.2  # of the latest run in a name's moving average
MONITOR_STOP_SECONDS = 10.0  # the longest a shutdown waits for the monitor's last round

Finished = list[tuple[TaskRecord, "Outcome | None"]]


@dataclass(frozen=True, slots=True)
class _Held:
    """A task submitted and not yet sent to a child."""

    record: TaskRecord
    steps: list[StepRecord] | None
    since: float  # time.monotonic() when it was submitted
    ahead: ClassVar[bool] = True  # every one waits for a free child (see held.Waiting)


@dataclass(frozen=True, slots=True)
class _Sent:
    """A task of a child's batch."""

    record: TaskRecord
    limit: float | None  # its hard time limit, in seconds


@dataclass
class _Child:
    process: ForkedChild
    conn: Connection
    slot: int
    reader: MessageReader
    batch: list[_Sent] = field(default_factory=list)
    done: int = 0  # outcomes of the batch received so far
    ran: int = 0  # tasks it ran (max_tasks_per_child)
    retiring: bool = False  # exiting (max_tasks_per_child), dead or killed: takes no task
    cancelled: set[int] = field(default_factory=set)  # of the batch: revoked, not to start

    @property
    def busy(self) -> bool:
        return self.done < len(self.batch)

    @property
    def idle(self) -> bool:
        return not self.retiring and self.done >= len(self.batch)


class PreforkPool:
    """``-P prefork``: child processes forked by a fork server (see above)."""

    prefetches = True  # submitted tasks wait for the next free child
    adaptive = False  # claims exactly children x prefetch multiplier (see Pool.adaptive)
    terminates = True  # a running child is killed
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._options, self._finish = engine, executor_id, options, finish
        self._forks = ForkServer(self._child_main)
        self._slots = Slots()
        self._children: list[_Child] = []
        self._generation = 0  # changes with the children: the monitor then re-registers pipes
        self._held: collections.deque[_Held] = collections.deque()
        self._seconds: dict[str, float] = {}  # moving average of each task name's run time
        self._latest_seconds: float | None = None  # that of the name of the task finished last
        self._lock = threading.Lock()
        self._stopping = False
        self._cut_short = False  # shutdown(wait=False) killed the children: no task died of itself
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
        slot = self._slots.take()
        try:
            process, conn = self._forks.spawn()
        except BaseException:
            self._slots.give(slot)
            raise
        self._spawned += 1
        self._generation += 1
        conn.send((f"ForkPoolWorker-{self._spawned}", slot))  # the child's first message
        return _Child(process, conn, slot, MessageReader(conn.fileno()))

    def _child_main(self, conn: Connection) -> None:
        self._wake_read.close()  # the pool's own pipe: not the child's
        self._wake_write.close()
        child_main(conn, self._slots, self._engine, self._executor_id, self._options)

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        self.submit_many([(record, steps)])

    def submit_many(self, tasks: list[tuple[TaskRecord, list[StepRecord] | None]]) -> None:
        """Hold a claimed batch, then feed the idle children once: they share it in
        micro-batches (fed task by task, the first idle child would get the first task alone)."""
        now = time.monotonic()
        with self._lock:
            self._held.extend(_Held(record, steps, now) for record, steps in tasks)
            limited = self._feed()
        if limited:
            self._wake_write.send(None)  # the monitor watches the child's time from now on

    def _feed(self) -> bool:
        """Send held tasks to the idle children (the lock held); True when one of them has
        a hard time limit. A child found dead is marked retiring (the monitor handles its
        death) and its batch held again."""
        limited = False
        while self._held and not self._stopping:
            child = next((c for c in self._children if c.idle), None)
            if child is None:
                break
            batch = self._take_batch(child)
            try:
                limited |= self._send(child, batch)
            except OSError:
                self._held.extendleft(reversed(batch))
        return limited

    def _take_batch(self, child: _Child) -> list[_Held]:
        """The held tasks ``child`` takes: the next one, and while the tasks are short the
        ones after it, up to a fair share of those held (the lock held)."""
        held = self._held
        live = sum(1 for c in self._children if not c.retiring)
        size = min(MICRO_BATCH_SIZE, math.ceil(len(held) / max(1, live)))
        if self._options.max_tasks_per_child is not None:  # it exits after its last one
            size = min(size, self._options.max_tasks_per_child - child.ran)
        batch = [held.popleft()]
        expected = self._seconds.get(batch[0].record.name, math.inf)
        while len(batch) < size and held:
            expected += self._seconds.get(held[0].record.name, math.inf)
            if expected > MICRO_BATCH_SECONDS:
                break
            batch.append(held.popleft())
        return batch

    def _send(self, child: _Child, batch: list[_Held]) -> bool:
        """Start ``batch`` on the idle ``child`` (the lock held); True when a task of it has
        a hard time limit. OSError when the child is dead (it is then marked retiring)."""
        sent, message, limited = [], [], False
        for held in batch:
            record = held.record
            hard, soft = time_limits(
                self._engine, record, self._options.time_limit, self._options.soft_time_limit
            )
            sent.append(_Sent(record, hard))
            message.append((record_fields(record), held.steps, soft, held.since))
            limited = limited or hard is not None
        self._slots.reset(child.slot)
        child.batch, child.done, child.cancelled = sent, 0, set()
        try:
            child.conn.send(message)
        except OSError:
            child.batch, child.retiring = [], True
            raise
        return limited

    def recent_task_seconds(self) -> float | None:
        return self._latest_seconds

    def waiting(self) -> int:
        with self._lock:
            return len(self._held) + sum(len(c.batch) - c.done - 1 for c in self._children if c.busy)

    def resize(self, delta: int) -> None:
        """Start ``delta`` more children, or stop ``-delta`` idle ones (Celery's pool_grow and
        pool_shrink); ValueError when fewer are idle."""
        with self._lock:
            if delta > 0:
                self._children.extend(self._spawn() for _ in range(delta))
            else:
                idle = [c for c in self._children if c.idle]
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
        tasks held for a free child or waiting in a child's batch, the pids of the
        children), for the worker's report."""
        with self._lock:
            busy = [c for c in self._children if c.busy]
            running = {c.batch[c.done].record.task_id: c.process.pid for c in busy}
            held = [h.record.task_id for h in self._held]
            held += [s.record.task_id for c in busy for s in c.batch[c.done + 1 :]]
            return running, held, [c.process.pid for c in self._children]

    def release_waiting(self) -> None:
        """Give back the held tasks (the rest of a child's micro-batch, a few milliseconds of
        work, runs)."""
        with self._lock:
            held, self._held = list(self._held), collections.deque()
        for task in held:
            self._finish(task.record, unstarted(task.record))

    def give_back(self, most: int, waited: float) -> int:
        """Held tasks only: a child's micro-batch is the child's."""
        return give_back_stale(self._lock, self._held, most, waited, self._finish)

    def alive(self) -> bool:
        return self._monitor.is_alive() or self._stopping

    def _watch(self) -> None:
        try:
            self._watch_children()
        except Exception as exc:  # a bug: without its monitor the pool runs nothing more
            log.exception("the prefork pool's monitor failed")
            self._give_up(exc)

    def _watch_children(self) -> None:
        poller = select.epoll()
        wake = self._wake_read.fileno()
        poller.register(wake, select.EPOLLIN)
        registered: dict[int, _Child] = {}
        generation = -1
        try:
            while True:
                if self._broken is not None:
                    self._give_up(self._broken)
                    return
                with self._lock:
                    if self._stopping and not any(c.busy for c in self._children):
                        return
                    if generation != self._generation:
                        generation = self._generation
                        registered = _register(poller, registered, self._children)
                    timeout = self._next_deadline(time.monotonic())
                finished: Finished = []
                for fd, _events in poller.poll(timeout):
                    if fd == wake:
                        while self._wake_read.poll():
                            self._wake_read.recv()
                    elif (child := registered.get(fd)) is not None and not child.conn.closed:
                        self._read(child, finished)  # (closed: replaced already, in this round)
                if self._terminating:
                    self._terminate_requested(finished)
                self._enforce_limits(finished)
                if self._held:  # the next tasks start before these outcomes are handled
                    with self._lock:
                        self._feed()
                for record, outcome in finished:
                    self._finish(record, outcome)
        finally:
            poller.close()

    def _next_deadline(self, now: float) -> float:
        """Seconds until the monitor must look at the running tasks' hard limits again."""
        timeout = 0.5
        for child in self._children:
            if child.busy and (limit := child.batch[child.done].limit) is not None:
                index, started = self._slots.running(child.slot)
                # not started yet: it starts after this, so its deadline is later than this
                deadline = started + limit if index == child.done else now + limit
                timeout = min(timeout, max(0.0, deadline - now))
        return timeout

    def _read(self, child: _Child, finished: Finished) -> None:
        """Take what ``child`` sent; handle its exit (retiring after its last task, or dead)."""
        messages, ended = child.reader.read()
        retiring = self._take(child, messages, finished)
        if retiring:
            # Its successor is forked before the slot is reported free, so the worker never
            # claims a task that no idle child could take.
            child.process.forget()
            back = self._given_back(child, child.done)  # none: its batches stop at its last task
            self._replace(child)
            finished.extend(back)
        elif ended:
            self._child_died(child, finished)

    def _take(self, child: _Child, messages: list[tuple[Any, ...]], finished: Finished) -> bool:
        """Record ``child``'s outcome messages; True when it said it exits now."""
        retiring = False
        with self._lock:
            for fields, seconds, last in messages:
                sent = child.batch[child.done]
                child.done += 1
                retiring = retiring or last
                if seconds is not None:
                    child.ran += 1
                    average = self._seconds.get(sent.record.name)
                    self._latest_seconds = self._seconds[sent.record.name] = (
                        seconds if average is None else average + (seconds - average) * RUN_TIME_WEIGHT
                    )
                finished.append((sent.record, outcome_of(fields)))
            if retiring:
                child.retiring = True
            elif messages and self._stopping and not child.busy and not child.retiring:
                with contextlib.suppress(OSError):  # killed already by a cold shutdown
                    child.conn.send(None)  # warm shutdown: this child is done
        return retiring

    def _drain(self, child: _Child, finished: Finished) -> None:
        """Take every outcome a dead ``child`` wrote before it died (without blocking: a
        process the task started may still hold the pipe open)."""
        with contextlib.suppress(OSError):
            os.set_blocking(child.conn.fileno(), False)
        while True:
            messages, ended = child.reader.read()
            self._take(child, messages, finished)
            if ended:
                return

    def _unreported(self, child: _Child) -> tuple[_Sent | None, Finished]:
        """Of a dead ``child``'s batch, once its messages are drained: the task it was
        running (None if between two), and the outcomes of those it never started."""
        running = self._running(child)
        return running, self._given_back(child, child.done + (running is not None))

    def _running(self, child: _Child) -> _Sent | None:
        """The task ``child`` has started (by its slot) and not reported, or None."""
        index = self._slots.running(child.slot)[0]
        return child.batch[index] if child.done == index < len(child.batch) else None

    @staticmethod
    def _given_back(child: _Child, first: int) -> Finished:
        """The tasks of ``child``'s batch from ``first`` on, which it never started: given
        back unstarted, or abandoned (None) where revoked."""
        batch = child.batch[first:]
        return [
            (s.record, None if i in child.cancelled else unstarted(s.record))
            for i, s in enumerate(batch, first)
        ]

    def _stop_child(self, child: _Child, finished: Finished) -> _Sent | None:
        """Kill ``child`` (or bury it: dead already), replace it, and give back its batch's
        unstarted tasks; return the task it was running, for the caller to record."""
        with self._lock:
            child.retiring = True  # takes no task from now on
        child.process.kill()
        child.process.join(timeout=5)
        self._drain(child, finished)
        running, back = self._unreported(child)
        self._replace(child)
        finished.extend(back)
        return running

    def _give_up(self, error: Exception) -> None:
        """Without its fork server no child can be replaced: give back the tasks of the
        children left (they die with the server) and stop. The worker sees the monitor gone
        (alive() is False), shuts down and exits non-zero, for a supervisor to restart it."""
        log.critical("the prefork pool cannot start child processes any more: %s", error)
        with self._lock:
            left, self._children = self._children, []
            held, self._held = list(self._held), collections.deque()
            for child in left:
                child.retiring = True
        finished: Finished = [(task.record, unstarted(task.record)) for task in held]
        for child in left:
            child.process.kill()
            self._drain(child, finished)
            running, back = self._unreported(child)
            child.conn.close()
            finished.extend(back)
            if running is not None:
                finished.append(self._lost(running.record, child.process.exitcode))
        for record, outcome in finished:
            self._finish(record, outcome)

    def _lost(self, task: TaskRecord, code: int | None) -> tuple[TaskRecord, Outcome]:
        if self._cut_short:
            reason = (
                "its process was stopped: the worker shut down cold (a second stop signal, or the "
                "end of its shutdown grace period)"
            )
            log.warning("task %s was still running; %s; it will run again", task.task_id, reason)
        else:
            reason = (
                "process ended, exit code unknown" if code is None else f"process exited with code {code}"
            )
            log.error("the process running task %s died (%s); it will run again", task.task_id, reason)
        # Given back rather than failed: the death counts as an attempt, so a task that keeps
        # killing its process ends in MAX_RECOVERY_ATTEMPTS_EXCEEDED.
        lost = encode_exception(WorkerLostError(reason))
        return task, Outcome(task.task_id, Status.ENQUEUED, error=lost, claim_token=task.claim_token)

    def _child_died(self, child: _Child, finished: Finished) -> None:
        running = self._stop_child(child, finished)
        if running is not None:
            finished.append(self._lost(running.record, child.process.exitcode))

    def terminate(self, task_id: str) -> bool:
        # A task not started yet is dropped here: held, or cancelled in its child's batch (the
        # child then reports it not run). The monitor thread kills a child running one: it is
        # the only one that replaces children, so a kill cannot race with it noticing the same
        # child's death.
        with self._lock:
            held = next((h for h in self._held if h.record.task_id == task_id), None)
            if held is not None:
                self._held.remove(held)
            else:
                sent = next(
                    (
                        (child, index)
                        for child in self._children
                        if not child.retiring
                        for index in range(child.done, len(child.batch))
                        if child.batch[index].record.task_id == task_id
                    ),
                    None,
                )
                if sent is None:
                    return False
                child, index = sent
                self._slots.cancel(child.slot, index)
                child.cancelled.add(index)
                if self._slots.running(child.slot)[0] < index:
                    log.warning(
                        "Task %s[%s] revoked before it started", child.batch[index].record.name, task_id
                    )
                    return True
                self._terminating.add(task_id)  # running, or starting (cancelled too late)
        if held is not None:  # it never started: nothing to stop, and the row is CANCELLED
            log.warning("Task %s[%s] revoked before it started", held.record.name, task_id)
            self._finish(held.record, None)
            return True
        self._wake_write.send(None)
        return True

    def _terminate_requested(self, finished: Finished) -> None:
        """Kill the children running a task revoked with terminate=True."""
        with self._lock:
            wanted, self._terminating = self._terminating, set()
            doomed = [
                child
                for child in self._children
                if child.busy
                and not child.retiring
                and (running := self._running(child)) is not None
                and running.record.task_id in wanted
            ]
        for child in doomed:
            running = self._stop_child(child, finished)
            if running is None:
                continue
            task = running.record
            if task.task_id in wanted:
                log.warning("Task %s[%s] terminated (revoked with terminate=True)", task.name, task.task_id)
                finished.append((task, None))  # the row is CANCELLED already: nothing to write
            else:  # the wanted one finished a moment before the kill, and the next had started
                finished.append(self._lost(task, child.process.exitcode))

    def _enforce_limits(self, finished: Finished) -> None:
        now = time.monotonic()
        with self._lock:
            over = [
                child
                for child in self._children
                if child.busy
                and not child.retiring
                and (limit := child.batch[child.done].limit) is not None
                and (started := self._slots.running(child.slot))[0] == child.done
                and now - started[1] >= limit
            ]
        for child in over:
            sent = child.batch[child.done]
            running = self._stop_child(child, finished)
            if running is None:
                continue
            task, limit = running.record, running.limit
            if running is not sent or limit is None:  # it finished just in time: not this one
                finished.append(self._lost(task, child.process.exitcode))
                continue
            log.error(
                "Task %s[%s] passed its hard time limit of %gs; its process was killed",
                task.name,
                task.task_id,
                limit,
            )
            exceeded = TimeLimitExceeded(f"task ran longer than its time limit of {limit:g}s")
            self._tell_time_limit(task, exceeded)
            error = encode_exception(exceeded)
            finished.append(
                (task, Outcome(task.task_id, Status.ERROR, error=error, claim_token=task.claim_token))
            )

    def _tell_time_limit(self, task: TaskRecord, exceeded: TimeLimitExceeded) -> None:
        """Tell ``options.on_time_limit`` (a Celery app's worker: its task_failure, errbacks
        and task_postrun, which the killed child never sent)."""
        told = self._options.on_time_limit
        if told is None:
            return
        try:
            told(task, exceeded)
        except Exception:
            log.exception("on_time_limit of task %s[%s] raised", task.name, task.task_id)

    def _replace(self, child: _Child) -> None:
        with self._lock:
            child.conn.close()
            self._slots.give(child.slot)
            index = self._children.index(child)
            self._children.pop(index)
            self._generation += 1
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
                if not child.busy or not wait:
                    with contextlib.suppress(OSError):
                        child.conn.send(None)
        self._wake_write.send(None)
        if not wait:
            self._cut_short = True
            for child in children:
                child.process.kill()
        for child in children:
            child.process.join(timeout=10)
        if self._monitor.is_alive() and threading.current_thread() is not self._monitor:
            # The monitor records what the children left (a killed child's task given back):
            # the worker stops its outcome writer next, which must have them by then.
            self._monitor.join(timeout=MONITOR_STOP_SECONDS)
        self._forks.close()


def _register(
    poller: select.epoll, registered: dict[int, _Child], children: Iterable[_Child]
) -> dict[int, _Child]:
    """Make ``poller`` watch the pipes of ``children`` (and no other child's)."""
    now = {child.conn.fileno(): child for child in children if not child.conn.closed}
    for fd, child in registered.items():
        if now.get(fd) is not child:
            with contextlib.suppress(OSError):  # closed already, and so dropped by the kernel
                poller.unregister(fd)
    for fd, child in now.items():
        if registered.get(fd) is not child:
            try:
                poller.register(fd, select.EPOLLIN)
            except FileExistsError:  # a closed pipe's number, reused
                poller.modify(fd, select.EPOLLIN)
    return now
