"""Conformance of the system database, on PostgreSQL and SQLite: migrations, versions, the clock."""

from __future__ import annotations

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.sqlfiles import load_migrations


def test_migrate_is_idempotent(sysdb: SystemDatabase) -> None:
    assert sysdb.migrate() == []
    expected = [m.version for m in load_migrations(sysdb.target.dialect)]
    assert len(expected) >= 2 and [m.version for m in sysdb.migrations_applied()] == expected


def test_versions(sysdb: SystemDatabase) -> None:
    sysdb.version_register("v1")
    sysdb.version_register("v1")
    assert [name for name, _ in sysdb.versions_list()] == ["v1"]
