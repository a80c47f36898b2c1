"""The PostgreSQL sessions: a server that cannot be reached is reported as unavailable."""

from __future__ import annotations

import socket
import time

import pytest

from pgtasks.sysdb import ConfigurationError, DatabaseUnavailable, SystemDatabase
from pgtasks.sysdb.lifo_pool import LifoConnectionPool
from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.records import RecoverStaleParams
from pgtasks.sysdb.urls import parse_database_url


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_postgres_unreachable_server_is_unavailable_on_a_first_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No connection is ever bound: the pool times out on the very first attempt, which must
    # surface as DatabaseUnavailable (callers retry it), not as a Python error. Operations
    # safe to repeat retry through an outage for PGTASKS_RECONNECT_DEADLINE: shortened here.
    monkeypatch.setenv("PGTASKS_RECONNECT_DEADLINE", "1")
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/postgres?connect_timeout=1"
    db = PostgresSystemDatabase(parse_database_url(url, "pgtasks"), pool_wait_seconds=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="is unavailable"):
            db.task_get("some-task")  # one statement in autocommit (the retrying runner)
        with pytest.raises(DatabaseUnavailable, match="is unavailable"):
            db.task_cancel("some-task")  # a write in autocommit
        with pytest.raises(DatabaseUnavailable, match="is unavailable"):
            db.tasks_recover_stale(RecoverStaleParams())  # a transaction
        assert time.monotonic() - started < 30
    finally:
        db.close()


def test_a_pool_timeout_is_reported_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGTASKS_RECONNECT_DEADLINE", "0")
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/postgres?connect_timeout=1"
    db = PostgresSystemDatabase(parse_database_url(url, "pgtasks"), pool_wait_seconds=0.5)
    try:
        with pytest.raises(DatabaseUnavailable, match=r"no pooled connection within 0.5s \(pool timeout"):
            db.task_get("some-task")
        with pytest.raises(DatabaseUnavailable, match=r"no pooled connection within 0.5s \(pool timeout"):
            db.tasks_recover_stale(RecoverStaleParams())  # a transaction
    finally:
        db.close()


def test_a_bad_reconnect_deadline_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGTASKS_RECONNECT_DEADLINE", "soon")
    with pytest.raises(ConfigurationError, match="PGTASKS_RECONNECT_DEADLINE must be a number of seconds"):
        PostgresSystemDatabase(parse_database_url("postgresql://postgres@127.0.0.1:1/postgres", "pgtasks"))


def test_limit_outage_wait_shortens_the_wait_of_a_process_shutting_down(
    monkeypatch: pytest.MonkeyPatch, sysdb: SystemDatabase
) -> None:
    """A worker shutting down limits its remaining retries to its grace period: a statement
    against an unreachable server then fails at once instead of waiting an hour."""
    monkeypatch.setenv("PGTASKS_RECONNECT_DEADLINE", "3600")
    sysdb.limit_outage_wait(0)  # SQLite: nothing to limit, and no error
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/postgres?connect_timeout=1"
    db = PostgresSystemDatabase(parse_database_url(url, "pgtasks"), pool_wait_seconds=0.5)
    try:
        db.limit_outage_wait(0)
        with pytest.raises(DatabaseUnavailable, match="is unavailable"):
            db.task_get("some-task")  # would retry for the hour without the limit
    finally:
        db.close()


def test_the_pool_hands_out_the_connection_given_back_last(pg_url: str) -> None:
    """Last in, first out: consecutive statements of one thread run on one session (its
    server process warm) however many the pool holds, and the session idle longest stays
    at the end the pool's shrinking closes first."""
    db = PostgresSystemDatabase(parse_database_url(pg_url, "pgtasks"))
    try:
        db.migrate()
        pool = db._open_pool()
        # Three sessions and no more, so that the three held below are all there are: a
        # fourth, opened in the background for an earlier wait, could arrive while the order
        # is read (seen once under load at the dependency floors: a stranger at index 1).
        pool.resize(min_size=1, max_size=3)
        held = [pool.getconn() for _ in range(3)]  # the pool grows to three sessions
        for conn in held:
            pool.putconn(conn)
        assert isinstance(pool, LifoConnectionPool)
        used: list[object] = []
        for _ in range(5):
            db._retrying(lambda conn: used.append(conn))
            db.task_get("some-task")
        assert used == [held[-1]] * 5
        taken = [pool.getconn() for _ in range(3)]
        assert taken == held[::-1]
        for conn in taken:
            pool.putconn(conn)
    finally:
        db.close()


def test_the_lifo_pool_keeps_the_others_in_order(pg_url: str) -> None:
    """A connection given back and taken again leaves the order of the idle others as it
    was: the one idle longest is still the first the pool would close."""
    dsn = PostgresSystemDatabase(parse_database_url(pg_url, "pgtasks")).target.dsn
    with LifoConnectionPool(dsn, min_size=3, max_size=3, open=True) as pool:
        pool.wait(timeout=30)
        a, b, c = (pool.getconn() for _ in range(3))
        for conn in (a, b, c):
            pool.putconn(conn)
        for _ in range(3):
            conn = pool.getconn()
            assert conn is c
            pool.putconn(conn)
        assert pool.getconn() is c and pool.getconn() is b and pool.getconn() is a
        for conn in (a, b, c):
            pool.putconn(conn)
