"""Helpers of the bad-input and security tests: snapshots of the task table, the tables a
database holds, hostile strings, and a check that a refused call left nothing behind."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, settings

from pgtasks import App, PgtasksError
from pgtasks.sysdb.records import ListTasksParams, TaskRecord
from pgtasks.sysdb.urls import parse_database_url

# Examples per property: enough to find the edges, few enough for a module in seconds. The
# apps are per test, not per example, hence the function-scoped fixture check is off; no
# example database is written into the work tree.
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PROPERTY_PG = settings(PROPERTY, max_examples=25)

# Strings an attacker would try in any text that reaches SQL.
INJECTIONS = (
    "x'; DROP TABLE workflow_status; --",
    'x"; DROP TABLE workflow_status; --',
    "'; DELETE FROM workflow_status WHERE ''='",
    'pgtasks"; DROP SCHEMA pgtasks CASCADE; --',
    "' OR '1'='1",
    '"',
    "'",
    "\\",
    "\\'",
    "%s",
    "%(task_id)s",
    "$1",
    ":name",
    "?",
    "--",
    "/* */",
    "\x00",
    "a\x00'; DROP TABLE workflow_status; --",
    "\u2028\u2029",
    "ñ☃𝄞",
    "Robert'); DROP TABLE workflow_status;--",
)

EXPECTED_TABLES = frozenset(
    {
        "workflow_status",
        "operation_outputs",
        "queues",
        "executors",
        "application_versions",
        "workflow_schedules",
    }
)


def snapshot(app: App) -> dict[str, TaskRecord]:
    """Every task row of the app's database, by id."""
    rows = app.engine.admin.tasks(ListTasksParams(limit=1_000_000))
    return {r.task_id: r for r in rows}


def table_names(database_url: str) -> set[str]:
    """The tables of pgtasks' schema (PostgreSQL) or file (SQLite), read without pgtasks."""
    target = parse_database_url(database_url)
    if target.dialect == "postgres":
        with psycopg.connect(target.dsn) as conn:
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (target.schema,),
            ).fetchall()
    else:
        with sqlite3.connect(target.sqlite_path) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows}


def refused(
    app: App,
    call: Callable[[], Any],
    match: str,
    error: type[BaseException] | tuple[type[BaseException], ...] = PgtasksError,
) -> BaseException:
    """``call()`` must raise ``error`` whose message contains ``match`` (case-insensitive),
    and the task table must be exactly as before."""
    before = snapshot(app)
    with pytest.raises(error) as info:
        call()
    assert match.lower() in str(info.value).lower(), f"{match!r} not in {info.value!s}"
    assert snapshot(app) == before, "a refused call changed the task table"
    return info.value
