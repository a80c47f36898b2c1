"""Retrying database calls made from inside a running task."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pgtasks.engine.errors import TaskReleased
from pgtasks.support.backoff import Backoff, Retry
from pgtasks.sysdb.errors import DatabaseBusy, DatabaseUnavailable

T = TypeVar("T")
log = logging.getLogger("pgtasks.engine")

RETRY_BACKOFF = Backoff(first=0.05, cap=2.0)
# A refusal by a live server (DatabaseBusy: a lock held elsewhere, a statement timeout) does
# not put the lease at risk: the heartbeat renews it on a session of its own. Such refusals are
# waited out for this long (as long as an outage, by default), not just for one lease.
BUSY_GIVE_UP_SECONDS = 60.0


def with_database_retry(call: Callable[[], T], give_up_after: float, what: str, task_id: str) -> T:
    """Run ``call``; while the database is unavailable, retry with backoff.

    Every call wrapped here is safe to repeat (reads, and fenced writes that recognise their
    own earlier commit). After ``give_up_after`` seconds of outage (the lease: by then another
    worker may own the task) raise :class:`TaskReleased` so the task is given back; refusals
    by a live server (:class:`DatabaseBusy`) are waited out longer (BUSY_GIVE_UP_SECONDS).
    """
    started = time.monotonic()
    retry: Retry | None = None  # made on the first failure: the way through reads the clock once
    while True:
        try:
            return call()
        except DatabaseUnavailable as exc:
            retry = _retry_for(retry, exc, started, give_up_after)
            time.sleep(_pause_or_release(retry, exc, give_up_after, what, task_id))


async def with_database_retry_async(
    call: Callable[[], Awaitable[T]], give_up_after: float, what: str, task_id: str
) -> T:
    """:func:`with_database_retry` for a task on a shared event loop: ``call()`` makes a fresh
    awaitable per attempt and the waits between attempts do not block the loop."""
    started = time.monotonic()
    try:
        return await call()
    except DatabaseUnavailable as exc:
        return await retry_database_async(call, exc, started, give_up_after, what, task_id)


async def retry_database_async(
    call: Callable[[], Awaitable[T]],
    failure: DatabaseUnavailable,
    started: float,
    give_up_after: float,
    what: str,
    task_id: str,
) -> T:
    """The rest of :func:`with_database_retry_async` once the call made at ``started`` failed
    with ``failure``: for a caller that makes its first attempt inline (one coroutine frame
    less on the way through, where nothing fails)."""
    retry: Retry | None = None
    while True:
        retry = _retry_for(retry, failure, started, give_up_after)
        await asyncio.sleep(_pause_or_release(retry, failure, give_up_after, what, task_id))
        try:
            return await call()
        except DatabaseUnavailable as exc:
            failure = exc


def _retry_for(retry: Retry | None, exc: DatabaseUnavailable, started: float, give_up_after: float) -> Retry:
    """The retries of a call made at ``started``, after a failure with ``exc``: through an
    outage the call gives up ``give_up_after`` seconds (the lease) after it was made (or after
    the outage began, if refusals came first); through refusals by a live server (DatabaseBusy)
    after BUSY_GIVE_UP_SECONDS, if longer."""
    if retry is None:
        busy_for = (
            max(give_up_after, BUSY_GIVE_UP_SECONDS) if isinstance(exc, DatabaseBusy) else give_up_after
        )
        return Retry(RETRY_BACKOFF, started + busy_for)
    if not isinstance(exc, DatabaseBusy):  # an outage now: from here on the lease is at risk
        retry.deadline = min(retry.deadline or math.inf, time.monotonic() + give_up_after)
    return retry


def _pause_or_release(
    retry: Retry, exc: DatabaseUnavailable, give_up_after: float, what: str, task_id: str
) -> float:
    """The pause before the next attempt; TaskReleased once the lease leaves no room for one."""
    pause = retry.next_delay()
    if pause is None:
        log.error("task %s: %s failed for %.0fs, releasing it: %s", task_id, what, give_up_after, exc)
        raise TaskReleased(task_id) from exc
    level = logging.WARNING if retry.failures == 1 else logging.DEBUG  # once per call
    log.log(level, "task %s: %s failed, retrying in %.2fs: %s", task_id, what, pause, exc)
    return pause
