"""Migrations: the migrated schema equals the declared one; concurrent launches migrate once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.sqlfiles import load_declared_schema, load_migrations
from tests.support.processes import REPO


def _pg_catalog(conn: psycopg.Connection[Any], schema: str) -> dict[str, Any]:
    columns = conn.execute(
        "SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity"
        " FROM information_schema.columns WHERE table_schema = %s ORDER BY 1, 2",
        [schema],
    ).fetchall()
    indexes = conn.execute(
        "SELECT indexname, replace(indexdef, %s, 'S.') FROM pg_indexes WHERE schemaname = %s ORDER BY 1",
        [f"{schema}.", schema],
    ).fetchall()
    constraints = conn.execute(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)"
        " FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
        " WHERE n.nspname = %s ORDER BY 2",
        [schema],
    ).fetchall()
    strip = [(r[0].split(".")[-1], r[1], r[2].replace(f"{schema}.", "S.")) for r in constraints]
    policies = conn.execute(
        "SELECT tablename, policyname, cmd, qual, with_check FROM pg_policies WHERE schemaname = %s"
        " ORDER BY 1, 2",
        [schema],
    ).fetchall()
    policies = [tuple(str(v).replace(f"{schema}.", "S.") for v in p) for p in policies]
    options = conn.execute(
        "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.reloptions IS NOT NULL ORDER BY 1",
        [schema],
    ).fetchall()
    return {
        "columns": columns,
        "indexes": indexes,
        "constraints": strip,
        "policies": policies,
        "options": options,
    }


@pytest.fixture
def pg_conn(pg_server_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        yield conn


def test_postgres_migrated_schema_equals_declared(
    pg_server_url: str, pg_conn: psycopg.Connection[Any]
) -> None:
    migrated, declared = "m_" + uuid.uuid4().hex[:8], "d_" + uuid.uuid4().hex[:8]
    db = open_system_database(f"{pg_server_url}?schema={migrated}")
    assert [m.version for m in db.migrate()] == [m.version for m in load_migrations("postgres")]
    db.close()
    pg_conn.execute(f'CREATE SCHEMA "{declared}"')
    pg_conn.execute(load_declared_schema("postgres").replace("__schema__", f'"{declared}"'))
    try:
        got, want = _pg_catalog(pg_conn, migrated), _pg_catalog(pg_conn, declared)
        got["columns"] = [c for c in got["columns"] if c[0] != "pgtasks_migrations"]
        got["constraints"] = [c for c in got["constraints"] if c[0] != "pgtasks_migrations"]
        got["indexes"] = [i for i in got["indexes"] if "pgtasks_migrations" not in i[0]]
        got["policies"] = [p for p in got["policies"] if p[0] != "pgtasks_migrations"]
        assert got == want
        assert len(want["columns"]) > 50 and len(want["indexes"]) > 10 and len(want["policies"]) == 48
    finally:
        pg_conn.execute(f'DROP SCHEMA "{migrated}" CASCADE')
        pg_conn.execute(f'DROP SCHEMA "{declared}" CASCADE')


def _sqlite_catalog(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(path)
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name != 'pgtasks_migrations' ORDER BY 1"
        )
    ]
    catalog: dict[str, Any] = {}
    for table in tables:
        catalog[table] = {
            "columns": conn.execute(f"PRAGMA table_info({table})").fetchall(),
            "fks": conn.execute(f"PRAGMA foreign_key_list({table})").fetchall(),
            "indexes": sorted(
                (name, unique, partial, conn.execute(f"PRAGMA index_info({name})").fetchall())
                for _, name, unique, _, partial in conn.execute(f"PRAGMA index_list({table})")
            ),
        }
    catalog["index_sql"] = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL ORDER BY 1"
    ).fetchall()
    conn.close()
    return catalog


def test_sqlite_migrated_schema_equals_declared(tmp_path: Path) -> None:
    db = open_system_database(f"sqlite:///{tmp_path / 'migrated.sqlite3'}")
    db.migrate()
    db.close()
    declared = sqlite3.connect(tmp_path / "declared.sqlite3")
    declared.executescript(load_declared_schema("sqlite"))
    declared.close()
    want = _sqlite_catalog(tmp_path / "declared.sqlite3")
    assert _sqlite_catalog(tmp_path / "migrated.sqlite3") == want
    assert "workflow_status" in want and len(want["index_sql"]) > 5


MIGRATE_SNIPPET = """
import sys, time
from pgtasks.sysdb import open_system_database
db = open_system_database(sys.argv[1])
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
print(len(db.migrate()))
"""


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_ten_processes_launching_at_once_migrate_exactly_once(
    dialect: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url" if dialect == "postgres" else "sqlite_url")
    import time

    start_at = str(time.time() + 2.0)  # every process calls migrate() at the same instant
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATE_SNIPPET, url, start_at],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(10)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 10, [err for _, err in results]
    applied = sorted(int(out.strip()) for out, _ in results)
    assert applied == [0] * 9 + [len(load_migrations(dialect))]
    db = open_system_database(url)
    assert [m.version for m in db.migrations_applied()] == [m.version for m in load_migrations(dialect)]
    db.close()
