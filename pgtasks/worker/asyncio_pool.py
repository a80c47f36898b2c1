"""The asyncio pool (``-P asyncio``): one event loop, in a thread of the worker process, runs
every claimed ``async def`` task as an asyncio task, up to ``-c`` at once.

- The claim loop stays where it is: it claims for the free slots and, where no queue has
  limits, ahead of them (sized by the task rate), and hands each claimed batch over with one
  ``call_soon_threadsafe``; tasks beyond ``-c`` wait in the pool (``Held``) for a coroutine to
  end, and go back unstarted at a warm shutdown. Outcomes go to the worker's batch completer
  as on the threads pool.
- Nothing on the loop blocks: an async step's checkpoint joins the process's group-commit
  writer and is awaited; ownership reads and step loading run on the pool's threads.
- A sync task (``def``) runs on one of those threads, as on the threads pool (at most ``-c``
  threads, made only when needed). So does a Celery task's tracer, whose ``async def`` body
  runs on the shared loop while the thread waits.
- Time limits cancel the coroutine (see :func:`pgtasks.engine.execution.within_limits`); a
  revoke with ``terminate=True`` cancels it at once. A sync task's thread cannot be stopped.
- A coroutine that blocks the loop stops those timers too: the watchdog
  (:mod:`pgtasks.worker.loop_watch`) names it after a second, and once it is past its hard
  limit the pool fails it with TimeLimitExceeded, gives back every other task it holds and
  asks for the worker process to be replaced (``replace_process``: the blocked thread cannot
  be stopped, the process can).
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import TimeLimitExceeded
from pgtasks.engine.execution import TimeLimits, execute_task_async, on_shared_loop
from pgtasks.engine.failures import encode_exception
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord
from pgtasks.worker.held import Held, checked_to_run, give_back_stale, unstarted, waited_long
from pgtasks.worker.limits import time_limits
from pgtasks.worker.loop_watch import TASK_PREFIX, LoopWatch, Running
from pgtasks.worker.pools import Finish, PoolOptions, guarded_outcome, run_guarded

log = logging.getLogger("pgtasks.worker")


class AsyncioPool:
    """``-P asyncio``: async tasks on one event loop, sync ones on threads (see above)."""

    prefetches = True
    adaptive = True  # the claim-ahead follows the task rate (Worker._free_slots)
    terminates = True  # a running coroutine is cancelled
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._options, self._finish = engine, executor_id, options, finish
        self._loop = asyncio.new_event_loop()
        self._threads = ThreadPoolExecutor(options.size, thread_name_prefix="pgtasks-task")
        self._loop.set_default_executor(self._threads)
        self._tasks: dict[str, asyncio.Task[None]] = {}  # running async tasks, by task id (loop only)
        self._terminated: set[str] = set()  # revoked with terminate=True (loop only)
        self._cancelled: set[str] = set()  # cancelled by this pool: their outcome is not written
        self._thread = threading.Thread(target=self._serve, name="pgtasks-asyncio", daemon=True)
        self._stopping = False
        # Every task submitted and not yet finished, for the watchdog; and those whose outcome
        # the watchdog wrote (their coroutine, if the loop ever runs again, writes nothing).
        self._submitted: dict[str, Running] = {}
        self._given_up: set[str] = set()
        self._lock = threading.Lock()
        self._held: collections.deque[Held] = collections.deque()  # claimed, not started (lock)
        self._active = 0  # coroutines started and not ended (loop only)
        self._watch = LoopWatch(self._loop, self._running, self._overrun)
        self.replace_process = False  # set once the loop is blocked past a hard time limit

    def start(self) -> None:
        self._thread.start()
        self._watch.start()

    def _running(self) -> dict[str, Running]:
        with self._lock:
            return dict(self._submitted)

    def _overrun(self, task_id: str) -> None:
        """On the watchdog's thread: the loop is blocked by ``task_id`` past its hard limit."""
        with self._lock:
            held, self._submitted = self._submitted, {}
            self._given_up.update(held)
            waiting, self._held = list(self._held), collections.deque()
        blocker = held.pop(task_id)
        limit = blocker.hard_limit or 0.0
        log.error(
            "Task %s[%s] blocked the event loop past its hard time limit of %gs: failing it with "
            "TimeLimitExceeded, giving back the %d other tasks of the loop and replacing the worker process",
            blocker.record.name,
            task_id,
            limit,
            len(held),
        )
        self.replace_process = True
        error = encode_exception(TimeLimitExceeded(f"task ran longer than its time limit of {limit:g}s"))
        self._finish(
            blocker.record,
            Outcome(task_id, Status.ERROR, error=error, claim_token=blocker.record.claim_token),
        )
        for other in held.values():
            self._finish(
                other.record,
                Outcome(other.record.task_id, Status.ENQUEUED, claim_token=other.record.claim_token),
            )
        for task in waiting:
            self._finish(task.record, unstarted(task.record))

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def alive(self) -> bool:
        return (self._thread.is_alive() or self._stopping) and not self.replace_process

    def waiting(self) -> int:
        return len(self._held)

    def recent_task_seconds(self) -> float | None:
        return None  # not measured: the default claim-ahead keeps its bound (Worker._ahead)

    def release_waiting(self) -> None:
        with self._lock:
            held, self._held = list(self._held), collections.deque()
        for task in held:
            self._finish(task.record, unstarted(task.record))

    def give_back(self, most: int, waited: float) -> int:
        return give_back_stale(self._lock, self._held, most, waited, self._finish)

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        self.submit_many([(record, steps)])

    def submit_many(self, tasks: list[tuple[TaskRecord, list[StepRecord] | None]]) -> None:
        """Hand over a whole claimed batch: one wake-up of the loop, which starts what it has
        room for; the rest waits for a coroutine to end."""
        if self._loop.is_closed() or not self._thread.is_alive():
            raise RuntimeError("the asyncio pool's event loop is not running")
        if self.replace_process:  # the loop is blocked: given back at once, attempts taken back
            for record, _ in tasks:
                self._finish(record, unstarted(record))
            return
        since = time.monotonic()
        with self._lock:
            room = self._options.size - self._active - len(self._held)  # _active: a hint here
            self._held.extend(Held(r, steps, since, n >= room) for n, (r, steps) in enumerate(tasks))
        self._loop.call_soon_threadsafe(self._start_held)

    def _start_held(self) -> None:
        """On the loop: start held tasks while fewer than ``-c`` run (none once stopping)."""
        while self._active < self._options.size and not self._stopping:
            with self._lock:
                if not self._held:
                    return
                held = self._held.popleft()
            record, options = held.record, self._options
            limits = time_limits(self._engine, record, options.time_limit, options.soft_time_limit)
            with self._lock:
                self._submitted[record.task_id] = Running(record, time.monotonic(), limits[0])
            self._active += 1
            task = self._loop.create_task(self._run(held, limits), name=f"{TASK_PREFIX}{record.task_id}")
            self._tasks[record.task_id] = task

    async def _run(self, held: Held, limits: TimeLimits) -> None:
        record, steps = held.record, held.steps
        task_id = record.task_id
        outcome: Outcome | None = None
        try:
            start: TaskRecord | None = record
            if waited_long(held):
                start = await self._loop.run_in_executor(
                    None, checked_to_run, self._engine, record, self._executor_id
                )
            if start is None:
                pass  # revoked, taken over or expired while it waited: not run
            elif self._runs_on_loop(start):
                outcome = await _guarded(self._engine, start, self._executor_id, steps, limits)
            else:
                outcome = await self._loop.run_in_executor(None, self._on_thread, start, steps, limits)
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.pop(task_id, None)
            with self._lock:
                self._submitted.pop(task_id, None)
                given_up = task_id in self._given_up
            self._active -= 1
            self._start_held()
        if given_up:  # the watchdog wrote its outcome already
            return
        if task_id in self._cancelled:
            # Revoked with terminate=True (the row is CANCELLED already), or a cold shutdown
            # (the row stays PENDING here and is recovered): nothing to write either way.
            self._cancelled.discard(task_id)
            outcome = None
        if task_id in self._terminated:
            self._terminated.discard(task_id)
            log.warning("Task %s[%s] terminated (revoked with terminate=True)", record.name, task_id)
        self._finish(record, outcome)

    def _runs_on_loop(self, record: TaskRecord) -> bool:
        """Whether the function registered for the task is itself a coroutine function. A sync
        wrapper around one (a Celery task's tracer) runs on a thread; the coroutine it returns
        still runs on this loop (see run_coroutine)."""
        registry = self._engine.registry
        return record.name in registry and inspect.iscoroutinefunction(registry.get(record.name).fn)

    def _on_thread(
        self, record: TaskRecord, steps: list[StepRecord] | None, limits: TimeLimits
    ) -> Outcome | None:
        """A sync task (or a sync wrapper around a coroutine) on a pool thread."""
        on_shared_loop(self._loop, limits)  # a coroutine it runs goes to the shared loop
        return run_guarded(self._engine, record, self._executor_id, steps)

    def terminate(self, task_id: str) -> bool:
        """Cancel the coroutine of a running async task (a sync one cannot be stopped)."""
        if task_id not in self._tasks:  # a read of a dict another thread writes: a hint only
            return False
        self._loop.call_soon_threadsafe(self._cancel, task_id)
        return True

    def _cancel(self, task_id: str) -> None:
        task = self._tasks.get(task_id)
        if task is not None and task_id not in self._terminated:
            self._terminated.add(task_id)
            self._cancelled.add(task_id)
            task.cancel("revoked with terminate=True")

    def shutdown(self, wait: bool) -> None:
        """Stop the loop; with ``wait`` False cancel what still runs (it is recovered later)."""
        self._stopping = True
        self._watch.stop()
        if not self._thread.is_alive():
            return
        if self.replace_process:  # the loop is blocked: nothing to wait for, the process goes
            self._threads.shutdown(wait=False)
            return
        if not wait:

            def cancel_all() -> None:
                for task_id, task in list(self._tasks.items()):
                    self._cancelled.add(task_id)
                    task.cancel("worker shutting down")

            self._loop.call_soon_threadsafe(cancel_all)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._threads.shutdown(wait=wait)


async def _guarded(
    engine: Engine, record: TaskRecord, executor_id: str, steps: list[StepRecord] | None, limits: TimeLimits
) -> Outcome | None:
    """:func:`~pgtasks.worker.pools.run_guarded` on the loop: an internal error still ends the
    task once; a lost database gives it back."""
    try:
        return await execute_task_async(engine, record, executor_id, steps, limits)
    except Exception as exc:  # never let a task take the worker down (a cancellation passes)
        return guarded_outcome(record, exc)
