"""PostgreSQL URLs and schemas for tests: a scratch schema dropped afterwards, a URL on a given
schema or as another user, and the URL of the least-privilege worker role on a migrated schema."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg

from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.provisioning import RoleNames, roles_script

WORKER_ROLE = "pgtasks_test_worker"  # the role PGTASKS_TEST_AS_ROLE=worker runs the suites as


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``schema=<schema>`` added to its query."""
    return url + ("&" if "?" in url else "?") + f"schema={schema}"


def with_user(url: str, user: str, password: str | None = None) -> str:
    """``url`` connecting as ``user`` (with ``password``), to the same host, database and query."""
    parts = urlsplit(url)
    credentials = user if password is None else f"{user}:{password}"
    netloc = credentials + "@" + parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def new_schema_name(prefix: str = "t_") -> str:
    """A schema name no other test uses."""
    return prefix + uuid.uuid4().hex[:12]


def drop_schema(server_url: str, schema: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def scratch_schema(server_url: str, prefix: str = "t_") -> Iterator[str]:
    """The name of a schema no other test uses (not created here), dropped at the end."""
    schema = new_schema_name(prefix)
    try:
        yield schema
    finally:
        drop_schema(server_url, schema)


def worker_role_url(server_url: str, schema: str) -> str:
    """Migrate ``schema`` as the server's superuser, grant it to the worker role of `pgtasks
    roles` (rows only, no DDL; created on first use), and return the URL connecting as it."""
    owner = urlsplit(server_url).username or "postgres"
    db = open_system_database(with_schema(server_url, schema))
    db.migrate()
    db.close()
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [WORKER_ROLE]).fetchone()
        script = roles_script(
            schema, RoleNames(owner, WORKER_ROLE, WORKER_ROLE, WORKER_ROLE), create_roles=False
        )
        if not exists:
            conn.execute(f"CREATE ROLE {WORKER_ROLE} LOGIN")
        conn.execute(script)
    return with_user(with_schema(server_url, schema), WORKER_ROLE)
