"""Retrying database calls made from inside a running task."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pgtasks.engine.errors import TaskReleased
from pgtasks.support.backoff import Backoff, Retry
from pgtasks.sysdb.errors import DatabaseUnavailable

T = TypeVar("T")
log = logging.getLogger("pgtasks.engine")

RETRY_BACKOFF = Backoff(first=0.05, cap=2.0)


def with_database_retry(call: Callable[[], T], give_up_after: float, what: str, task_id: str) -> T:
    """Run ``call``; while the database is unavailable, retry with backoff.

    Every call wrapped here is safe to repeat (reads, and fenced writes that recognise their
    own earlier commit). After ``give_up_after`` seconds (the lease: by then another worker
    may own the task) raise :class:`TaskReleased` so the task is given back.
    """
    deadline = time.monotonic() + give_up_after
    retry: Retry | None = None  # made on the first failure: the way through reads the clock once
    while True:
        try:
            return call()
        except DatabaseUnavailable as exc:
            retry = retry or Retry(RETRY_BACKOFF, deadline)
            time.sleep(_pause_or_release(retry, exc, give_up_after, what, task_id))


async def with_database_retry_async(
    call: Callable[[], Awaitable[T]], give_up_after: float, what: str, task_id: str
) -> T:
    """:func:`with_database_retry` for a task on a shared event loop: ``call()`` makes a fresh
    awaitable per attempt and the waits between attempts do not block the loop."""
    deadline = time.monotonic() + give_up_after
    retry: Retry | None = None  # made on the first failure: the way through reads the clock once
    while True:
        try:
            return await call()
        except DatabaseUnavailable as exc:
            retry = retry or Retry(RETRY_BACKOFF, deadline)
            await asyncio.sleep(_pause_or_release(retry, exc, give_up_after, what, task_id))


def _pause_or_release(
    retry: Retry, exc: DatabaseUnavailable, give_up_after: float, what: str, task_id: str
) -> float:
    """The pause before the next attempt; TaskReleased once the lease leaves no room for one."""
    pause = retry.next_delay()
    if pause is None:
        log.error("task %s: %s failed for %.0fs, releasing it: %s", task_id, what, give_up_after, exc)
        raise TaskReleased(task_id) from exc
    log.warning("task %s: %s failed, retrying in %.2fs: %s", task_id, what, pause, exc)
    return pause
