"""The system database: one semantic interface, PostgreSQL and SQLite dialects.

:func:`open_system_database` turns a URL into the right dialect. Nothing above this package
writes SQL.
"""

from __future__ import annotations

from pgtasks.sysdb.errors import ConfigurationError, DatabaseUnavailable, PgtasksError
from pgtasks.sysdb.interface import SystemDatabase
from pgtasks.sysdb.records import Status
from pgtasks.sysdb.urls import DEFAULT_SCHEMA, DatabaseTarget, parse_database_url


def open_system_database(url: str, schema: str = DEFAULT_SCHEMA, pool_size: int = 10) -> SystemDatabase:
    """The system database behind ``url`` (not yet connected; call ``migrate()`` first)."""
    target = parse_database_url(url, schema)
    if target.dialect == "postgres":
        from pgtasks.sysdb.postgres import PostgresSystemDatabase

        return PostgresSystemDatabase(target, pool_size=pool_size)
    from pgtasks.sysdb.sqlite import SqliteSystemDatabase

    return SqliteSystemDatabase(target)


def open_replica(url: str, schema: str) -> SystemDatabase:
    """A PostgreSQL replica of the system database, for reads that may lag: a small pool that
    fails at once while the replica is unreachable (its readers then ask the primary)."""
    from pgtasks.sysdb.postgres import PostgresSystemDatabase

    target = parse_database_url(url, schema)
    return PostgresSystemDatabase(target, pool_size=4, pool_wait_seconds=2, retry_for=0)


__all__ = [
    "ConfigurationError",
    "DatabaseTarget",
    "DatabaseUnavailable",
    "PgtasksError",
    "Status",
    "SystemDatabase",
    "open_system_database",
]
