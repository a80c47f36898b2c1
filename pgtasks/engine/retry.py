"""Retrying database calls made from inside a running task."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pgtasks.engine.errors import TaskReleased
from pgtasks.sysdb.errors import DatabaseUnavailable

T = TypeVar("T")
log = logging.getLogger("pgtasks.engine")

FIRST_DELAY = 0.05
MAX_DELAY = 2.0


def with_database_retry(call: Callable[[], T], give_up_after: float, what: str, task_id: str) -> T:
    """Run ``call``; while the database is unavailable, retry with backoff.

    Every call wrapped here is safe to repeat (reads, and fenced writes that recognise their
    own earlier commit). After ``give_up_after`` seconds (the lease: by then another worker
    may own the task) raise :class:`TaskReleased` so the task is given back.
    """
    deadline = time.monotonic() + give_up_after
    delay = FIRST_DELAY
    while True:
        try:
            return call()
        except DatabaseUnavailable as exc:
            if time.monotonic() + delay > deadline:
                log.error("task %s: %s failed for %.0fs, releasing it: %s", task_id, what, give_up_after, exc)
                raise TaskReleased(task_id) from exc
            log.warning("task %s: %s failed, retrying in %.2fs: %s", task_id, what, delay, exc)
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)


async def with_database_retry_async(
    call: Callable[[], Awaitable[T]], give_up_after: float, what: str, task_id: str
) -> T:
    """:func:`with_database_retry` for a task on a shared event loop: ``call()`` makes a fresh
    awaitable per attempt and the waits between attempts do not block the loop."""
    deadline = time.monotonic() + give_up_after
    delay = FIRST_DELAY
    while True:
        try:
            return await call()
        except DatabaseUnavailable as exc:
            if time.monotonic() + delay > deadline:
                log.error("task %s: %s failed for %.0fs, releasing it: %s", task_id, what, give_up_after, exc)
                raise TaskReleased(task_id) from exc
            log.warning("task %s: %s failed, retrying in %.2fs: %s", task_id, what, delay, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)
