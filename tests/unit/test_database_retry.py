"""The retries of a running task's database calls from a shared event loop: the first attempt
made by the caller (the async step path) and the rest by ``retry_database_async``."""

from __future__ import annotations

import asyncio
import time

import pytest

from pgtasks.engine.errors import TaskReleased
from pgtasks.engine.retry import retry_database_async, with_database_retry_async
from pgtasks.sysdb.errors import DatabaseBusy, DatabaseUnavailable


class Flaky:
    """A call that fails ``failures`` times with ``error``, then answers ``"ok"``."""

    def __init__(self, failures: int, error: DatabaseUnavailable) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "ok"


def test_an_outage_shorter_than_the_lease_is_waited_out() -> None:
    call = Flaky(2, DatabaseUnavailable("connection lost"))
    assert asyncio.run(with_database_retry_async(call, 30.0, "checkpoint", "t1")) == "ok"
    assert call.calls == 3


def test_after_an_inline_first_attempt_the_retries_go_on_until_one_succeeds() -> None:
    call = Flaky(1, DatabaseUnavailable("connection lost"))
    first = DatabaseUnavailable("the caller's own attempt failed")
    started = time.monotonic()
    assert asyncio.run(retry_database_async(call, first, started, 30.0, "checkpoint", "t1")) == "ok"
    assert call.calls == 2  # the caller's attempt is not made again before the pause


def test_the_lease_counts_from_the_first_attempt_not_from_the_retries() -> None:
    call = Flaky(100, DatabaseUnavailable("connection lost"))
    first = DatabaseUnavailable("connection lost")
    long_ago = time.monotonic() - 60.0  # the inline attempt was made a lease ago
    with pytest.raises(TaskReleased):
        asyncio.run(retry_database_async(call, first, long_ago, 1.0, "checkpoint", "t1"))
    assert call.calls == 0


def test_an_outage_as_long_as_the_lease_releases_the_task() -> None:
    call = Flaky(10_000, DatabaseUnavailable("connection lost"))
    with pytest.raises(TaskReleased):
        asyncio.run(with_database_retry_async(call, 0.3, "checkpoint", "t1"))
    assert 1 < call.calls < 10_000


def test_a_live_servers_refusal_is_waited_out_past_the_lease() -> None:
    call = Flaky(3, DatabaseBusy("lock_timeout"))
    first = DatabaseBusy("lock_timeout")
    # Past a lease of 0.01 s already; refusals are waited out for BUSY_GIVE_UP_SECONDS.
    started = time.monotonic() - 0.5
    assert asyncio.run(retry_database_async(call, first, started, 0.01, "checkpoint", "t1")) == "ok"
    assert call.calls == 4
