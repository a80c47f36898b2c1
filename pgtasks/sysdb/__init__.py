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


__all__ = [
    "ConfigurationError",
    "DatabaseTarget",
    "DatabaseUnavailable",
    "PgtasksError",
    "Status",
    "SystemDatabase",
    "open_system_database",
]
