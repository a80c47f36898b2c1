"""Execution pools: where a claimed task's body runs. The interface, the options, and
:func:`make_pool`, the one place that turns a pool's name into a pool.

- ``prefork`` (the default, as in Celery): child processes (:mod:`pgtasks.worker.prefork`).
- ``threads``: a thread pool in the worker process.
- ``solo``: one task at a time, inline in the claim loop.
- ``asyncio``: one event loop for async tasks (:mod:`pgtasks.worker.asyncio_pool`).

Every pool reports each finished task to ``finish(record, outcome)``; ``outcome`` None means
the task was abandoned (cancelled or taken over), an ENQUEUED outcome gives it back. A pool
says what it can do (:attr:`Pool.prefetches`, :attr:`Pool.terminates`); the worker asks it
instead of testing its name.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.engine.execution import execute_task
from pgtasks.engine.failures import encode_exception
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord
from pgtasks.worker.held import Held, checked_to_run, give_back_stale, unstarted, waited_long
from pgtasks.worker.prefork_slots import CAPACITY as PREFORK_CAPACITY

log = logging.getLogger("pgtasks.worker")

Finish = Callable[[TaskRecord, "Outcome | None"], None]
# Told a task whose process the pool killed at its hard time limit, with the error recorded.
Killed = Callable[[TaskRecord, BaseException], None]
POOLS = ("prefork", "threads", "solo", "asyncio")
# The threads pool wakes as many threads as the held tasks need to start within this many
# seconds by the recent task time (its moving average, this weight to the latest task).
HANDOFF_SECONDS = 0.005
TASK_TIME_WEIGHT = 0.2
# The pool of `pgtasks worker` without -P, of WorkerOptions and of PoolOptions: Celery's.
DEFAULT_POOL = "prefork"
# The pools that can stop a task at its time limit (a child is killed, a coroutine cancelled),
# and the one whose processes max_tasks_per_child replaces.
TIME_LIMITED_POOLS = ("prefork", "asyncio")
RECYCLED_POOLS = ("prefork",)
# The pools that run tasks in forked child processes, and the one that runs them in the claim
# loop's own thread (Celery's worker_process_init is sent in each child, or once for solo).
FORKING_POOLS = ("prefork",)
INLINE_POOLS = ("solo",)
MAX_SIZE = 1_000_000  # tasks at once, for any pool: far past what a process can run


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """Which pool (``kind``, one of :data:`POOLS`), its size and its limits; checked here,
    so that a worker refuses them before it starts."""

    kind: str = DEFAULT_POOL
    size: int = 1
    time_limit: float | None = None
    soft_time_limit: float | None = None
    max_tasks_per_child: int | None = None
    # Resident memory (KiB, as Celery's worker_max_memory_per_child) past which a child is
    # replaced after the task it is running.
    max_memory_per_child: int | None = None
    # Called in each forked child before its first task, and with its exit code as it exits
    # on its own (asked to, or at its task or memory limit): a Celery app's worker sends
    # worker_process_init / worker_process_shutdown from them. Never in the fork server.
    on_child_start: Callable[[], None] | None = None
    on_child_exit: Callable[[int], None] | None = None
    # Told each task the prefork pool killed at its hard time limit, on its monitor thread,
    # before the failure is written; an exception is logged, never raised (see WorkerOptions).
    on_time_limit: Killed | None = None

    def __post_init__(self) -> None:
        if self.kind not in POOLS:
            raise ConfigurationError(f"unknown pool {self.kind!r}; choose one of {', '.join(POOLS)}")
        if self.size > MAX_SIZE:
            raise ConfigurationError(f"concurrency must be at most {MAX_SIZE:,}, not {self.size:,}")
        if self.kind in FORKING_POOLS and self.size > PREFORK_CAPACITY:
            raise ConfigurationError(
                f"the prefork pool runs at most {PREFORK_CAPACITY:,} processes, not {self.size:,}: "
                "more tasks at once need -P threads (or -P asyncio for async tasks)"
            )
        for name in ("time_limit", "soft_time_limit"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
            ):
                raise ConfigurationError(f"{name} must be a positive number of seconds, not {value!r}")
        if self.kind not in TIME_LIMITED_POOLS and (self.time_limit or self.soft_time_limit):
            raise ConfigurationError(
                "time limits need the prefork pool (-P prefork), or -P asyncio for async tasks: a "
                "thread cannot be killed safely"
            )
        count = self.max_tasks_per_child
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ConfigurationError(f"max_tasks_per_child must be a whole number >= 1, not {count!r}")
        if self.kind not in RECYCLED_POOLS and self.max_tasks_per_child:
            raise ConfigurationError("max_tasks_per_child needs the prefork pool (-P prefork)")
        memory = self.max_memory_per_child
        if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int) or memory < 1):
            raise ConfigurationError(
                f"max_memory_per_child must be a whole number of kilobytes >= 1, not {memory!r}"
            )
        if self.kind not in RECYCLED_POOLS and memory:
            raise ConfigurationError("max_memory_per_child needs the prefork pool (-P prefork)")


class Pool(Protocol):
    """A running pool, as the worker uses it."""

    # Tasks submitted while every process is busy wait in the pool for the next free one
    # (prefork), so the worker may claim ahead of its free slots (its prefetch).
    prefetches: bool
    # Its claim-ahead follows the recent task rate, and its outcomes ride with the claims of a
    # backlog (Worker._free_slots, Worker._draining): the threads and asyncio pools. Not prefork,
    # whose parent claims a few tasks at a time for its children.
    adaptive: bool
    # terminate() can stop a running task at once (revoke with terminate=True).
    terminates: bool
    # True once the pool holds a thread it cannot stop (the asyncio pool's blocked loop): the
    # worker then shuts down and replaces its process (run_worker).
    replace_process: bool

    def start(self) -> None: ...

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None: ...

    def terminate(self, task_id: str) -> bool:
        """Stop a running task at once (revoke with terminate=True); False if this pool cannot."""
        ...

    def alive(self) -> bool:
        """False once the pool can no longer run tasks (its monitor stopped on its own)."""
        ...

    def waiting(self) -> int:
        """How many submitted tasks wait for a free child (prefetched), not yet started."""
        ...

    def recent_task_seconds(self) -> float | None:
        """How long the tasks ran lately (a moving average; None: not known), for the default
        claim-ahead (Worker._ahead)."""
        ...

    def release_waiting(self) -> None:
        """Give back every task that has not started (warm shutdown): each is finished with an
        unstarted ENQUEUED outcome, so its claim's attempt is taken back."""
        ...

    def give_back(self, most: int, waited: float) -> int:
        """Give back up to ``most`` of the tasks waiting for a free process, the last claimed
        first, each held at least ``waited`` seconds, as :meth:`release_waiting` does; the
        others keep their order. How many went back."""
        ...

    def shutdown(self, wait: bool) -> None: ...


def run_guarded(
    engine: Engine, record: TaskRecord, executor_id: str, steps: list[StepRecord] | None = None
) -> Outcome | None:
    """execute_task, where an internal error still ends the task once.

    A lost database gives the task back (it runs again from its last checkpoint); any other
    error ends it ERROR with that error stored, because running the body again would repeat
    both its effects and the error. The log line names the error's type only: its text or
    traceback may quote the task's arguments, secret ones included (they are in the task's
    stored error)."""
    try:
        return execute_task(engine, record, executor_id, steps)
    except BaseException as exc:  # never let a task take the worker down
        return guarded_outcome(record, exc)


def guarded_outcome(record: TaskRecord, exc: BaseException) -> Outcome:
    """The outcome of a task whose execution failed inside pgtasks with ``exc``: given back
    when the database was lost, else ERROR with that error stored (see :func:`run_guarded`)."""
    if isinstance(exc, DatabaseUnavailable):
        log.warning("lost the database running task %s; giving it back", record.task_id)
        return Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token)
    log.error(
        "internal error running task %s[%s]: %s (stored as its error)",
        record.name,
        record.task_id,
        type(exc).__name__,
    )
    return Outcome(record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token)


class ThreadPool:
    """``-P threads``: ``size`` long-lived threads of the worker process take the claimed tasks
    from one local queue, in order. The worker may claim ahead of the free threads (see
    ``Worker._free_slots``): tasks wait here, and go back unstarted at a warm shutdown.

    A thread that ends a task takes the next held one without sleeping. A claimed batch wakes
    only as many sleeping threads as its tasks need to start within HANDOFF_SECONDS, by the
    recent task time: a backlog of short tasks is run by a few threads (the GIL runs one at a
    time anyway; 32 threads woken for 128 no-op tasks only take turns and context switches,
    and starve the claim thread), slow ones by as many threads as there are tasks. Should the
    tasks turn slow while a few threads hold the others back, one sleeping thread looks every
    HANDOFF_SECONDS while tasks wait, and wakes the threads they need once none started
    meanwhile (see _watch)."""

    prefetches = True
    adaptive = True  # the claim-ahead follows the task rate (Worker._free_slots)
    terminates = False
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._finish = engine, executor_id, finish
        self._size = options.size
        self._held: collections.deque[Held] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a task (the lock held); a woken one counts until it runs
        self._watching = False  # a sleeping thread watches the held tasks (see _watch)
        self._watch_wanted = False  # the next thread woken watches them
        self._taken = 0  # tasks taken from the held ones so far (the lock held)
        self._task_seconds: float | None = None  # recent task time, a moving average (None: none yet)
        self._since: list[float] = [0.0] * self._size  # when each thread's task started (0: none)

    def start(self) -> None:
        for n in range(self._size):
            thread = threading.Thread(target=self._serve, args=(n,), name=f"pgtasks-task_{n}", daemon=True)
            try:
                thread.start()
            except RuntimeError as exc:  # the system's limit on threads (or their memory)
                raise ConfigurationError(
                    f"cannot start {self._size:,} threads (-c {self._size}): {exc} after {n:,}; "
                    "the system allows fewer"
                ) from exc
            self._threads.append(thread)

    def terminate(self, task_id: str) -> bool:
        return False  # a thread cannot be stopped safely: the task stops at its next step

    def alive(self) -> bool:
        return True

    def waiting(self) -> int:
        return len(self._held)

    def recent_task_seconds(self) -> float | None:
        return self._task_seconds

    def release_waiting(self) -> None:
        with self._cond:
            held, self._held = list(self._held), collections.deque()
        for task in held:
            self._finish(task.record, unstarted(task.record))

    def give_back(self, most: int, waited: float) -> int:
        return give_back_stale(self._cond, self._held, most, waited, self._finish)

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        self.submit_many([(record, steps)])

    def submit_many(self, tasks: list[tuple[TaskRecord, list[StepRecord] | None]]) -> None:
        """Hand over a whole claimed batch at once: one lock, and the sleeping threads its tasks
        need woken (with one more to watch them if some are left to the threads awake)."""
        since = time.monotonic()
        with self._cond:
            if self._stopping:
                raise RuntimeError("the threads pool is shut down")
            self._held.extend(Held(record, steps, since) for record, steps in tasks)
            wake = self._wanted()
            if wake < min(len(self._held), self._idle) and not (self._watching or self._watch_wanted):
                self._watch_wanted = True
                wake += 1
            self._cond.notify(wake)

    def _wanted(self) -> int:
        """How many sleeping threads to wake (the lock held): enough that the held tasks start
        within HANDOFF_SECONDS by the recent task time; every one needed before a task ended."""
        held, idle = len(self._held), self._idle
        if not held or not idle:
            return 0
        if self._task_seconds is None:
            return min(held, idle)
        awake = self._size - idle
        needed = math.ceil(held * self._task_seconds / HANDOFF_SECONDS)
        return min(held, idle, max(needed - awake, 0 if awake else 1))

    def _serve(self, n: int) -> None:
        engine, executor_id, finish, cond = self._engine, self._executor_id, self._finish, self._cond
        while True:
            with cond:
                task = self._take(n)
            if task is None:
                return
            record: TaskRecord | None = task.record
            if waited_long(task):
                record = checked_to_run(engine, task.record, executor_id)
            if record is None:
                self._since[n] = 0.0
                finish(task.record, None)  # revoked, taken over or expired while it waited
                continue
            outcome = run_guarded(engine, record, executor_id, task.steps)
            took = time.monotonic() - self._since[n]
            self._since[n] = 0.0
            known = self._task_seconds  # a moving average; another thread's update may be lost
            self._task_seconds = took if known is None else known + (took - known) * TASK_TIME_WEIGHT
            finish(task.record, outcome)

    def _take(self, n: int) -> Held | None:
        """The next held task for thread ``n`` (the lock held), after a sleep if there is none;
        None once the pool stops. A thread woken to watch the held tasks does that first, if
        another thread runs a task."""
        while not self._stopping:
            if self._held and self._watch_wanted and any(self._since):
                self._watch_wanted = False
                self._watch()
            elif self._held:
                self._taken += 1
                self._since[n] = time.monotonic()
                return self._held.popleft()
            else:
                self._watch_wanted = False  # nothing held to watch: the next batch asks again
                self._idle += 1
                try:
                    self._cond.wait()
                finally:
                    self._idle -= 1
        return None

    def _watch(self) -> None:
        """While tasks are held and left to the threads awake, look every HANDOFF_SECONDS: if
        none of them started meanwhile (the threads awake all run slow tasks), wake a thread for
        each held task and take the longest running time as the task time; else wake the
        threads the held tasks need by the task time. A wake-up meant for a task is passed on
        to a sleeping thread. Returns once none is held, or to take a task itself when every
        other thread runs one."""
        self._watching = True
        try:
            while self._held and not self._stopping:
                taken = self._taken
                self._idle += 1
                try:
                    woken = self._cond.wait(HANDOFF_SECONDS)
                finally:
                    self._idle -= 1
                if not self._idle:  # every other thread runs a task: this one takes the next
                    return
                if woken:  # meant for a thread to take a task: passed on, this one watches on
                    self._cond.notify(1)
                elif self._taken == taken:  # none started: the threads awake all run slow tasks
                    running = [since for since in self._since if since]
                    if running:
                        longest = time.monotonic() - min(running)
                        self._task_seconds = max(self._task_seconds or 0.0, longest)
                    self._cond.notify(min(len(self._held), self._idle))
                else:
                    self._cond.notify(self._wanted())
        finally:
            self._watching = False

    def shutdown(self, wait: bool) -> None:
        """Stop the threads once their running task ends (``wait``: wait for that); tasks still
        held are left PENDING (a cold shutdown: recovered later)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if wait:
            for thread in self._threads:
                thread.join()


class SoloPool:
    """``-P solo``: one task at a time, run by submit() itself, in the claim loop."""

    prefetches = False
    adaptive = False
    terminates = False
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._finish = engine, executor_id, finish

    def start(self) -> None:
        pass

    def terminate(self, task_id: str) -> bool:
        return False

    def alive(self) -> bool:
        return True

    def waiting(self) -> int:
        return 0

    def recent_task_seconds(self) -> float | None:
        return None

    def release_waiting(self) -> None:
        pass

    def give_back(self, most: int, waited: float) -> int:
        return 0

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        self._finish(record, run_guarded(self._engine, record, self._executor_id, steps))

    def shutdown(self, wait: bool) -> None:
        pass


def pool_class(kind: str) -> Callable[[Engine, str, PoolOptions, Finish], Pool]:
    """The class of the pool ``kind`` names (one of :data:`POOLS`)."""
    if kind == "threads":
        return ThreadPool
    if kind == "solo":
        return SoloPool
    # Imported here: both modules build on this one.
    if kind == "asyncio":
        from pgtasks.worker.asyncio_pool import AsyncioPool

        return AsyncioPool
    if kind == "prefork":
        from pgtasks.worker.prefork import PreforkPool

        return PreforkPool
    raise ConfigurationError(f"unknown pool {kind!r}; choose one of {', '.join(POOLS)}")


def make_pool(engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> Pool:
    """The pool ``options.kind`` names, not yet started."""
    return pool_class(options.kind)(engine, executor_id, options, finish)
