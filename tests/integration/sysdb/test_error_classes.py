"""Which PostgreSQL errors are an outage (issue 17, item 4): only connection failures and
transient refusals become ``DatabaseUnavailable``; a program limit (SQLSTATE class 54), a data
error (22) and the like are the request's own fault and are raised as themselves, so a producer
that retries until acknowledged does not retry them forever. Against a real server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import psycopg
import pytest

from pgtasks.sysdb.pg_sessions import is_unavailable
from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.records import NewTask
from pgtasks.sysdb.urls import parse_database_url


@pytest.fixture
def pg_sysdb(pg_url: str) -> Iterator[PostgresSystemDatabase]:
    db = PostgresSystemDatabase(parse_database_url(pg_url, "pgtasks"))
    db.migrate()
    yield db
    db.close()


def test_a_key_over_the_index_row_limit_is_not_an_outage(pg_sysdb: PostgresSystemDatabase) -> None:
    # Random text does not compress below the btree limit (~2,700 bytes) as repeated text would.
    key = secrets.token_hex(4000)
    task = NewTask("too-long", "proj.add", '{"args":[],"kwargs":{}}', "default", deduplication_id=key)
    with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="index row"):
        pg_sysdb.tasks_enqueue([task])
    assert pg_sysdb.task_get("too-long") is None
    assert pg_sysdb.tasks_enqueue([NewTask("fine", "proj.add", '{"args":[],"kwargs":{}}', "default")])


def _error_of(pg_url: str, *statements: str) -> psycopg.Error:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        try:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            return exc
    raise AssertionError("no error")


def test_sqlstates_are_sorted_into_outages_and_the_rest(pg_server_url: str) -> None:
    pg_url = pg_server_url
    limit = _error_of(
        pg_url,
        "CREATE TEMP TABLE t (k text)",
        "CREATE INDEX ON t (k)",
        f"INSERT INTO t VALUES ('{secrets.token_hex(4000)}')",
    )
    assert limit.sqlstate == "54000" and isinstance(limit, psycopg.OperationalError)
    assert not is_unavailable(limit)
    data = _error_of(pg_url, "SELECT 1 / 0")
    assert data.sqlstate == "22012" and not is_unavailable(data)
    syntax = _error_of(pg_url, "SELEC 1")
    assert syntax.sqlstate == "42601" and not is_unavailable(syntax)
    cancelled = _error_of(pg_url, "SET statement_timeout = 1", "SELECT pg_sleep(1)")
    assert cancelled.sqlstate == "57014" and is_unavailable(cancelled)  # transient: retried
    with (
        psycopg.connect(pg_url, autocommit=True) as victim,
        psycopg.connect(pg_url, autocommit=True) as admin,
    ):
        admin.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError) as terminated:
            victim.execute("SELECT 1")
    assert is_unavailable(terminated.value)  # 57P01, or no SQLSTATE when the socket closed first
