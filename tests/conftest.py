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
    """A PostgreSQL URL whose ``?schema=`` is fresh for this test (dropped afterwards).

    With ``PGTASKS_TEST_AS_ROLE=worker`` the schema is migrated here, by the server's
    superuser, and the URL connects as the least-privilege worker role of `pgtasks roles`
    (rows only, no DDL): the tests then prove that role is enough."""
    schema = "t_" + uuid.uuid4().hex[:12]
    url = _with_schema(pg_server_url, schema)
    if os.environ.get(AS_ROLE_ENV) == "worker":
        url = _as_worker(pg_server_url, schema)
    yield url
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


AS_ROLE_ENV = "PGTASKS_TEST_AS_ROLE"
WORKER_ROLE = "pgtasks_test_worker"


def _as_worker(server_url: str, schema: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    from pgtasks.sysdb.provisioning import RoleNames, roles_script

    owner = urlsplit(server_url).username or "postgres"
    db = open_system_database(_with_schema(server_url, schema))
    db.migrate()
    db.close()
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [WORKER_ROLE]).fetchone()
        script = roles_script(schema, RoleNames(owner, WORKER_ROLE, WORKER_ROLE), create_roles=False)
        if not exists:
            conn.execute(f"CREATE ROLE {WORKER_ROLE} LOGIN")
        conn.execute(script)
    parts = urlsplit(_with_schema(server_url, schema))
    netloc = WORKER_ROLE + "@" + parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


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
