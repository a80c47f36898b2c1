"""Shared fixtures: a real PostgreSQL (started here unless PGTASKS_TEST_DATABASE_URL names
one) and SQLite files. Every test gets its own schema or file, so tests never see each
other's rows."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgtasks.sysdb import SystemDatabase, open_system_database
from tests.support.pgserver import PostgresServer

DIALECTS = ("postgres", "sqlite")


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """URL of the PostgreSQL server the suite uses (its ``postgres`` database)."""
    existing = os.environ.get("PGTASKS_TEST_DATABASE_URL")
    if existing:
        yield existing
        return
    server = PostgresServer().start()
    os.environ["PGTASKS_TEST_DATABASE_URL"] = server.url  # subprocesses inherit it
    try:
        yield server.url
    finally:
        os.environ.pop("PGTASKS_TEST_DATABASE_URL", None)
        server.destroy()


def _with_schema(url: str, schema: str) -> str:
    return url + ("&" if "?" in url else "?") + f"schema={schema}"


@pytest.fixture
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A PostgreSQL URL whose ``?schema=`` is fresh for this test (dropped afterwards)."""
    schema = "t_" + uuid.uuid4().hex[:12]
    yield _with_schema(pg_server_url, schema)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'pgtasks.sqlite3'}"


@pytest.fixture(params=DIALECTS)
def database_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on PostgreSQL and once on SQLite."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return request.getfixturevalue("sqlite_url")


@pytest.fixture
def sysdb(database_url: str) -> Iterator[SystemDatabase]:
    db = open_system_database(database_url)
    db.migrate()
    yield db
    db.close()
