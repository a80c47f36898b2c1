"""The asyncio pool (``-P asyncio``): one event loop, in a thread of the worker process, runs
every claimed ``async def`` task as an asyncio task, up to ``-c`` at once.

- The claim loop stays where it is: it claims for free slots and hands each record over with
  ``call_soon_threadsafe``; outcomes go to the worker's batch completer as on the threads pool.
- Nothing on the loop blocks: an async step's checkpoint joins the process's group-commit
  writer and is awaited; ownership reads and step loading run on the pool's threads.
- A sync task (``def``) runs on one of those threads, as on the threads pool (at most ``-c``
  threads, made only when needed). So does a Celery task's tracer, whose ``async def`` body
  runs on the shared loop while the thread waits.
- Time limits cancel the coroutine (see :func:`pgtasks.engine.execution.within_limits`); a
  revoke with ``terminate=True`` cancels it at once. A sync task's thread cannot be stopped.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from pgtasks.engine.core import Engine
from pgtasks.engine.execution import TimeLimits, execute_task_async, on_shared_loop
from pgtasks.sysdb.records import Outcome, StepRecord, TaskRecord
from pgtasks.worker.limits import time_limits
from pgtasks.worker.pools import Finish, PoolOptions, guarded_outcome, run_guarded

log = logging.getLogger("pgtasks.worker")


class AsyncioPool:
    """``-P asyncio``: async tasks on one event loop, sync ones on threads (see above)."""

    prefetches = False
    terminates = True  # a running coroutine is cancelled

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

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def alive(self) -> bool:
        return self._thread.is_alive() or self._stopping

    def waiting(self) -> int:
        return 0  # the worker submits only what it can start at once

    def release_waiting(self) -> None:
        pass

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        if self._loop.is_closed() or not self._thread.is_alive():
            raise RuntimeError("the asyncio pool's event loop is not running")
        limits = time_limits(self._engine, record, self._options.time_limit, self._options.soft_time_limit)
        self._loop.call_soon_threadsafe(self._start, record, steps, limits)

    def _start(self, record: TaskRecord, steps: list[StepRecord] | None, limits: TimeLimits) -> None:
        task = self._loop.create_task(self._run(record, steps, limits), name=f"pgtasks:{record.task_id}")
        self._tasks[record.task_id] = task

    async def _run(self, record: TaskRecord, steps: list[StepRecord] | None, limits: TimeLimits) -> None:
        task_id = record.task_id
        outcome: Outcome | None = None
        try:
            if self._runs_on_loop(record):
                outcome = await _guarded(self._engine, record, self._executor_id, steps, limits)
            else:
                outcome = await self._loop.run_in_executor(None, self._on_thread, record, steps, limits)
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.pop(task_id, None)
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
        if not self._thread.is_alive():
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
