"""Celery apps with ``async def`` tasks on `pgtasks worker -P asyncio` (issue 15): their
coroutines share the worker's event loop while Celery's hooks run as usual, and async code
sends and awaits them (``delay_async``, ``get_async``, ``join_async``, ``conn=`` an
AsyncConnection)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from celery import group
from celery.exceptions import TimeoutError as CeleryTimeoutError

from pgtasks.sysdb.urls import parse_database_url
from tests.compat.apps import async_celery_app as proj
from tests.support.celery_worker import celery_worker


@pytest.fixture
def worker(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    module, path = "tests.compat.apps.async_celery_app", tmp_path / "ledger"
    with celery_worker(
        proj.app, module, database_url, path, monkeypatch, "aio-celery", pool="asyncio", concurrency=30
    ):
        yield path


def test_async_celery_tasks_share_the_loop_and_keep_their_hooks(worker: Path) -> None:
    async def main() -> list[int]:
        sent = [await proj.barrier.delay_async(30) for _ in range(30)]
        return [await r.get_async(timeout=60) for r in sent]

    assert asyncio.run(main()) == [30] * 30
    assert sum(1 for line in worker.read_text().splitlines() if line.startswith("success ")) == 30
    assert proj.sync_square.delay(7).get(timeout=60) == 49  # a sync task, on a thread


def test_async_sends_waits_and_groups(worker: Path, database_url: str) -> None:
    async def main() -> tuple[int, list[int], int]:
        one = await proj.double.apply_async_async((21,), countdown=0)
        joined = await group(proj.double.s(i) for i in range(5)).apply_async().join_async(timeout=60)
        by_name = await proj.app.send_task_async("tests.compat.apps.async_celery_app.double", (4,))
        with pytest.raises(CeleryTimeoutError):
            await proj.app.AsyncResult("missing").get_async(timeout=0.1)
        return await one.get_async(timeout=60), joined, await by_name.get_async(timeout=60)

    assert asyncio.run(main()) == (42, [0, 2, 4, 6, 8], 8)


def test_delay_async_in_the_callers_async_transaction(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "tests.compat.apps.async_celery_app"
    with celery_worker(proj.app, module, pg_url, tmp_path / "ledger", monkeypatch, "aio-tx", pool="asyncio"):
        committed, rolled_back = asyncio.run(_send_in_transaction(parse_database_url(pg_url).dsn))
        assert proj.app.AsyncResult(committed).get(timeout=60) == 10
        assert proj.app.AsyncResult(rolled_back).state == "PENDING"  # never sent: no such task
        assert proj.app.engine.get_task(rolled_back) is None


async def _send_in_transaction(dsn: str) -> tuple[str, str]:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        async with conn.transaction():
            committed = await proj.double.apply_async_async((5,), conn=conn)
        try:
            async with conn.transaction():
                rolled_back = await proj.double.apply_async_async((6,), conn=conn)
                raise RuntimeError("the request failed")
        except RuntimeError:
            pass
    return committed.id, rolled_back.id
