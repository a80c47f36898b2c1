"""The async producer API (issue 15): sending and waiting from an event loop without blocking
it, bulk sends, and enqueue joined to the caller's psycopg.AsyncConnection transaction."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from pgtasks import App, ConfigurationError, TaskTimeoutError
from pgtasks.sysdb.urls import parse_database_url
from pgtasks.task import Task
from tests.support.inprocess import running_worker


def _app(url: str) -> tuple[App, Task, Task]:
    app = App("aio-producer", database_url=url, poll_interval=0.05)

    @app.task(name="p.add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="p.slow")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    return app, add, slow


def test_send_wait_and_bulk_without_blocking_the_loop(database_url: str) -> None:
    app, add, slow = _app(database_url)

    async def main() -> None:
        ticks = 0

        async def ticker() -> None:  # runs only while the loop is free
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(ticker())
        one = await add.delay_async(2, 3)
        other = await add.apply_async_async((4, 5), queue="default", task_id="fixed-id")
        many = await add.map_enqueue_async([(i, i) for i in range(50)])
        by_name = await app.enqueue_async("p.add", [1, 1])
        waiting = asyncio.create_task(slow.delay_async(0.5))
        assert other.id == "fixed-id"
        with running_worker(app, concurrency=4):
            before = ticks
            results = await asyncio.gather(
                one.get_async(timeout=30),
                other.get_async(timeout=30),
                by_name.get_async(timeout=30),
                *(r.get_async(timeout=30) for r in many),
            )
            assert results == [5, 9, 2, *(2 * i for i in range(50))]
            assert await (await waiting).get_async(timeout=30) == "done"
            assert ticks > before  # the loop went on while the waits were pending
            assert await one.ready_async() and await one.status_async() == "SUCCESS"
        with pytest.raises(TaskTimeoutError, match=r"is still ENQUEUED after 0\.2s"):
            await (await add.delay_async(0, 0)).get_async(timeout=0.2)
        with pytest.raises(TaskTimeoutError, match="no task with id 'nope' exists"):
            await app.AsyncResult("nope").get_async(timeout=0.1)
        beat.cancel()

    asyncio.run(main())
    app.close()


def test_enqueue_joins_the_callers_async_transaction(pg_url: str) -> None:
    app, add, _ = _app(pg_url)
    dsn = parse_database_url(pg_url).dsn  # the search_path is the app's schema, as in a real app

    async def main() -> tuple[str, str, str]:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            async with conn.transaction():
                committed = await add.apply_async_async((1, 2), conn=conn)
            try:
                async with conn.transaction():
                    rolled_back = await add.apply_async_async((3, 4), conn=conn)
                    raise RuntimeError("the request failed")
            except RuntimeError:
                pass
            autocommit = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            try:
                alone = await app.enqueue_async("p.add", [5, 6], conn=autocommit)
            finally:
                await autocommit.close()
        return committed.id, rolled_back.id, alone.id

    committed, rolled_back, alone = asyncio.run(main())
    assert app.engine.get_task(rolled_back) is None
    with running_worker(app):
        assert app.AsyncResult(committed).get(timeout=30) == 3
        assert app.AsyncResult(alone).get(timeout=30) == 11
    app.close()


def test_get_async_is_woken_by_the_notification(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the fallback read ten minutes away, only the notification that the task finished
    can end the wait within the test's 30 seconds."""
    monkeypatch.setattr("pgtasks.engine.core.FALLBACK_SECONDS", 600.0)
    app, _, slow = _app(pg_url)

    async def main() -> None:
        handle = await slow.delay_async(0.3)
        with running_worker(app):
            assert await asyncio.wait_for(handle.get_async(), timeout=30) == "done"

    asyncio.run(main())
    app.close()


def test_an_async_connection_needs_postgres(sqlite_url: str, pg_url: str) -> None:
    app, add, _ = _app(sqlite_url)

    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(parse_database_url(pg_url).dsn) as conn:
            with pytest.raises(ConfigurationError, match="needs PostgreSQL"):
                await add.apply_async_async((1, 2), conn=conn)

    asyncio.run(main())
    app.close()
