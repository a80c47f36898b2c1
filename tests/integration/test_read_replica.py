"""``?read_url=``: result polling, task lists and the dashboard's monitoring reads go to a
streaming replica (issue 18). Replay is paused on the replica to make it lag, so each test can
tell which server answered, and the staleness rule of docs/production.md is checked: a replica
read may be late, never wrong; what the replica does not have, or cannot answer, the primary
does; the last read of a wait goes to the primary."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
import pytest

from pgtasks import App
from pgtasks.sysdb.urls import parse_database_url
from tests.support.inprocess import running_worker, wait_for
from tests.support.replication import ReplicatedPair


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicatedPair]:
    servers = ReplicatedPair(synchronous=False).start()
    yield servers
    servers.destroy()


def _replay(pair: ReplicatedPair, paused: bool) -> None:
    with psycopg.connect(pair.standby.url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


def _caught_up(pair: ReplicatedPair) -> bool:
    with psycopg.connect(pair.primary.url, autocommit=True) as conn:
        row = conn.execute("SELECT replay_lsn >= pg_current_wal_lsn() FROM pg_stat_replication").fetchone()
    return bool(row and row[0])


def test_reads_go_to_the_replica_and_fall_back_to_the_primary(pair: ReplicatedPair) -> None:
    url = f"{pair.primary.url}?schema=replica_reads&read_url={quote(pair.standby.url, safe='')}"
    app = App("replica", database_url=url, poll_interval=0.05)

    @app.task(name="r.double")
    def double(x: int) -> int:
        return 2 * x

    before = double.delay(1)  # replicated while replay runs
    wait_for(lambda: _caught_up(pair), what="the replica to catch up")
    assert [t.task_id for t in app.list_tasks()] == [before.id]
    _replay(pair, paused=True)
    try:
        with running_worker(app):
            assert before.get(timeout=30) == 2  # the last read of the wait asks the primary
            wait_for(lambda: app.engine.get_task(before.id).status.value == "SUCCESS", what="its end")  # type: ignore[union-attr]
            assert before.status == "ENQUEUED"  # the replica is behind: late, not wrong
            # It ended before this wait began (no notification to come): the waiter's periodic
            # read of the primary ends the wait.
            assert asyncio.run(before.get_async(timeout=30)) == 2
            after = double.delay(21)  # the replica has no row for it: the primary answers
            assert after.get(timeout=30) == 42 and after.status == "SUCCESS"
            assert [t.task_id for t in app.list_tasks()] == [before.id]  # lists: the replica
            # the dashboard's queue counts too: the replica still has `before` waiting
            stats = {q.name: dict(q.counts) for q in app.engine.admin.queue_stats()}
            assert stats.get("default", {}).get("ENQUEUED") == 1
    finally:
        _replay(pair, paused=False)
    wait_for(lambda: _caught_up(pair), what="the replica to catch up")
    assert before.status == "SUCCESS"
    assert {t.task_id for t in app.list_tasks()} == {before.id, after.id}
    assert not any(q.counts.get("ENQUEUED") for q in app.engine.admin.queue_stats())
    app.close()


def test_an_unreachable_replica_leaves_reads_to_the_primary(pair: ReplicatedPair) -> None:
    dead = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1"
    url = f"{pair.primary.url}?schema=replica_down&read_url={quote(dead, safe='')}"
    app = App("replica-down", database_url=url, poll_interval=0.05)

    @app.task(name="r.add")
    def add(x: int, y: int) -> int:
        return x + y

    with running_worker(app):
        handle = add.delay(2, 3)
        assert handle.get(timeout=30) == 5 and handle.status == "SUCCESS"
    app.close()


def test_read_url_must_name_postgres() -> None:
    with pytest.raises(Exception, match="read_url must be a PostgreSQL URL"):
        parse_database_url("postgresql://h/db?read_url=sqlite:///x.sqlite3")
