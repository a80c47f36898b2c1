"""Conformance of the system database, on PostgreSQL and SQLite: enqueue notifications (a
listener on PostgreSQL; none on SQLite, whose workers poll), notifications of finished tasks,
enqueue on a caller's async connection, and closing."""

from __future__ import annotations

import asyncio
import select
import time

import psycopg
import pytest

from pgtasks.sysdb import SystemDatabase, open_system_database
from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.records import CompleteParams, Outcome, QueuePause, Status
from pgtasks.sysdb.urls import parse_database_url
from tests.integration.sysdb.support import claim, new


def test_a_listener_hears_the_queues_of_committed_enqueues(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_listener()
    if sysdb.target.dialect == "sqlite":
        assert listener is None
        return
    assert listener is not None
    try:
        sysdb.tasks_enqueue([new("a", queue="mail")])
        heard: set[str] = set()
        while "mail" not in heard:  # wait() blocks until a notification arrives (or 30 s pass)
            got = listener.wait(timeout=30)
            assert got, "no notification within 30 s"
            heard |= got
    finally:
        listener.close()


def test_announcing_queues_wakes_their_listeners(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_listener()
    sysdb.queues_announce(("mail", "sms"))  # SQLite: nothing to do, and no error
    if listener is None:
        assert sysdb.target.dialect == "sqlite"
        return
    try:
        sysdb.queues_announce(("mail", "sms"))
        heard: set[str] = set()
        while heard != {"mail", "sms"}:
            got = listener.wait(timeout=30)
            assert got, "no notification within 30 s"
            heard |= got
    finally:
        listener.close()


def test_close_ends_every_connection_and_a_new_instance_sees_the_rows(database_url: str) -> None:
    db = open_system_database(database_url)
    db.migrate()
    db.tasks_enqueue([new("a")])
    db.close()
    again = open_system_database(database_url)
    try:
        assert again.task_get("a") is not None
    finally:
        again.close()


@pytest.mark.parametrize("calls", [1, 2])
def test_close_can_be_called_again(sysdb: SystemDatabase, calls: int) -> None:
    for _ in range(calls):
        sysdb.close()


def test_a_resume_wakes_the_listeners_of_the_queue(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_listener()
    if sysdb.target.dialect == "sqlite":
        assert listener is None
        return
    assert listener is not None
    try:
        sysdb.queue_set_paused(QueuePause("mail", True))
        sysdb.queue_set_paused(QueuePause("mail", False))
        heard: set[str] = set()
        while "mail" not in heard:
            got = listener.wait(timeout=30)
            assert got, "no notification within 30 s"
            heard |= got
    finally:
        listener.close()


def test_finished_ids_are_sent_only_while_somebody_awaits_them(sysdb: SystemDatabase) -> None:
    """A NOTIFY serializes its commit with every other notifying one, so the outcomes'
    statement sends finished ids only while a done listener (a process awaiting results)
    exists; one that starts listening hears them within a second."""
    if sysdb.target.dialect == "sqlite":
        assert sysdb.open_done_listener() is None
        return
    channel = sysdb.done_channel  # type: ignore[attr-defined]
    direct = sysdb.target.listen_dsn or sysdb.target.dsn  # LISTEN needs a session (not PgBouncer's)
    with psycopg.connect(direct, autocommit=True) as plain:  # hears, but is no waiter
        plain.execute(f'LISTEN "{channel}"')

        def finish(task_id: str) -> None:
            sysdb.tasks_enqueue([new(task_id)])
            claim(sysdb, limit=10)
            sysdb.tasks_complete(CompleteParams("w1", (Outcome(task_id, Status.SUCCESS, "1"),)))

        def heard(timeout: float) -> list[str]:
            """What arrived within ``timeout`` (libpq's calls: notifies(timeout=) needs psycopg
            3.2, and the floors run 3.1)."""
            got: list[str] = []
            deadline = time.monotonic() + timeout
            while not got and time.monotonic() < deadline:
                select.select([plain.fileno()], [], [], max(0.0, deadline - time.monotonic()))
                plain.pgconn.consume_input()
                while (notify := plain.pgconn.notifies()) is not None:
                    got.append(notify.extra.decode())
            return got

        finish("unheard")
        # Notifications arrive in commit order: the marker, sent after, comes first and alone.
        with psycopg.connect(sysdb.target.dsn, autocommit=True) as other:
            other.execute("SELECT pg_notify(%s, 'marker')", (channel,))
        assert heard(30) == ["marker"]
        listener = sysdb.open_done_listener()
        assert listener is not None
        try:
            got: list[str] = []
            for attempt in range(40):  # the senders re-read who listens once a second
                finish(f"heard-{attempt}")
                got = heard(0.25)
                if got:
                    break
            assert got and got[0].startswith("heard-"), got
        finally:
            listener.close()


def test_the_done_listener_hears_the_ids_of_finished_tasks_only(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_done_listener()
    if sysdb.target.dialect == "sqlite":
        assert listener is None
        return
    assert listener is not None
    long_id = "é" * 255  # 510 bytes: the ids of one batch are split over several notifications
    ids = [f"done-{i}" for i in range(40)] + [long_id + str(i) for i in range(20)]
    try:
        sysdb.tasks_enqueue([new(i) for i in [*ids, "retried", "released"]])
        claim(sysdb, limit=100)
        outcomes = [Outcome(i, Status.SUCCESS, "1") for i in ids]
        outcomes += [
            Outcome("retried", Status.ENQUEUED, error="{}", retry_in_ms=0),
            Outcome("released", Status.ENQUEUED),
        ]
        sysdb.tasks_complete(CompleteParams("w1", tuple(outcomes)))
        heard: list[str] = []
        while len(heard) < len(ids):
            payloads = listener.wait(timeout=30)
            assert payloads, "no notification within 30 s"
            for payload in payloads:
                assert len(payload.encode()) < 8000
                heard += payload.split("\n")
        assert sorted(heard) == sorted(ids)  # not the retried or released ones
    finally:
        listener.close()


def test_an_async_enqueue_joins_the_callers_transaction(sysdb: SystemDatabase, pg_url: str) -> None:
    async def send(commit: bool) -> list[str]:
        dsn = parse_database_url(pg_url).dsn if sysdb.target.dialect == "sqlite" else sysdb.target.dsn
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            results = await sysdb.tasks_enqueue_async([new(f"async-{commit}"), new(f"async2-{commit}")], conn)
            if commit:
                await conn.commit()
            else:
                await conn.rollback()
        return [r.task_id for r in results]

    if sysdb.target.dialect == "sqlite":
        with pytest.raises(ConfigurationError, match="needs PostgreSQL"):
            asyncio.run(send(True))
        return
    assert asyncio.run(send(True)) == ["async-True", "async2-True"]
    assert asyncio.run(send(False)) == ["async-False", "async2-False"]
    assert sysdb.task_get("async-True") is not None and sysdb.task_get("async2-True") is not None
    assert sysdb.task_get("async-False") is None
    with pytest.raises(ConfigurationError, match=r"must be a psycopg\.AsyncConnection"):
        asyncio.run(sysdb.tasks_enqueue_async([new("x")], object()))
