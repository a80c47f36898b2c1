"""The asyncio pool's watchdog: a thread outside the event loop that sees the loop stop.

A coroutine that blocks (``time.sleep``, CPU work or a blocking driver call inside ``async
def``) holds every task on the loop, and the hard time limit, itself a timer of that loop,
cannot fire. The loop stamps the time every :data:`TICK` seconds; the ``pgtasks-loop-watch``
thread reads the stamp:

- blocked for more than ``warn_after`` seconds: one warning naming the task that blocks it
  (the task the loop is running);
- blocked while that task is past its hard time limit: ``on_overrun(task_id)`` once. The pool
  then fails the task with TimeLimitExceeded, gives its other tasks back and has the worker
  process replaced: a thread cannot be stopped from outside.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pgtasks.support.loops import ErrorPolicy, Loop
from pgtasks.sysdb.records import TaskRecord

log = logging.getLogger("pgtasks.worker")

TICK = 0.1  # seconds between the loop's stamps, and between the watchdog's looks
BLOCKED_WARNING = 1.0  # a loop blocked for longer is logged with the task that blocks it
TASK_PREFIX = "pgtasks:"  # the asyncio name of the task running a pgtasks task (then its id)


@dataclass(frozen=True, slots=True)
class Running:
    """A task on the loop: its record, when it started (time.monotonic()) and its hard limit."""

    record: TaskRecord
    started: float
    hard_limit: float | None


class LoopWatch:
    """Watches ``loop`` (see the module); ``running()`` gives the tasks on it by id."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        running: Callable[[], dict[str, Running]],
        on_overrun: Callable[[str], None],
        warn_after: float = BLOCKED_WARNING,
    ) -> None:
        self._loop = loop
        self._running = running
        self._on_overrun = on_overrun
        self._warn_after = warn_after
        self._stamp = time.monotonic()
        self._warned_at: float | None = None  # the stamp of the block already warned about
        self.overrun: str | None = None  # the task that blocked the loop past its limit
        self._thread = Loop(
            "pgtasks-loop-watch", self._look, TICK, ErrorPolicy(log, "watching the event loop failed")
        )

    def start(self) -> None:
        """Start stamping (on the loop) and watching (on a thread of its own)."""
        self._loop.call_soon_threadsafe(self._tick)
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop(timeout=0)

    def blocked_for(self) -> float:
        """Seconds since the loop last ran its stamp (about TICK while it runs freely)."""
        return time.monotonic() - self._stamp

    def _tick(self) -> None:  # on the loop
        self._stamp = time.monotonic()
        self._loop.call_later(TICK, self._tick)

    def _look(self) -> None:
        stamp = self._stamp
        blocked = time.monotonic() - stamp
        if blocked <= self._warn_after + TICK or self.overrun is not None:
            return
        task_id = self._blocking_task()
        running = self._running().get(task_id) if task_id is not None else None
        if self._warned_at != stamp:
            self._warned_at = stamp
            culprit = "a callback" if running is None else f"task {running.record.name}[{task_id}]"
            log.warning(
                "the event loop of the asyncio pool has been blocked for %.1fs by %s: a blocking "
                "call inside async code; the %d other tasks of the loop wait for it",
                blocked,
                culprit,
                max(0, len(self._running()) - 1),
            )
        if running is None or running.hard_limit is None or task_id is None:
            return
        if time.monotonic() - running.started > running.hard_limit:
            self.overrun = task_id
            self._on_overrun(task_id)

    def _blocking_task(self) -> str | None:
        """The id of the pgtasks task the loop is running now, if it runs one."""
        task = asyncio.current_task(self._loop)
        name = task.get_name() if task is not None else ""
        return name[len(TASK_PREFIX) :] if name.startswith(TASK_PREFIX) else None
