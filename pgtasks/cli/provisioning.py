"""``pgtasks roles`` and ``pgtasks migrate --print-sql``: SQL for a database administrator."""

from __future__ import annotations

import argparse

from pgtasks.engine.core import Engine
from pgtasks.engine.settings import Settings
from pgtasks.sysdb.provisioning import (
    DEFAULT_ADMIN,
    DEFAULT_OWNER,
    DEFAULT_PRODUCER,
    DEFAULT_WORKER,
    RoleNames,
    roles_script,
)
from pgtasks.sysdb.urls import resolve_database_url


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``roles`` on the main parser's subcommands."""
    roles = sub.add_parser("roles", help="print the SQL that creates least-privilege roles (PostgreSQL)")
    roles.add_argument("--schema", default="pgtasks", help="the pgtasks schema (default pgtasks)")
    roles.add_argument("--owner", default=DEFAULT_OWNER, help="runs migrations (default %(default)s)")
    roles.add_argument("--worker", default=DEFAULT_WORKER, help="reads and writes rows (default %(default)s)")
    roles.add_argument(
        "--producer", default=DEFAULT_PRODUCER, help="enqueues and reads results (default %(default)s)"
    )
    roles.add_argument(
        "--admin", default=DEFAULT_ADMIN, help="management commands, dashboard (default %(default)s)"
    )
    roles.add_argument("--no-create", action="store_true", help="the roles exist: print the GRANTs only")


def print_roles(args: argparse.Namespace) -> int:
    names = RoleNames(args.owner, args.worker, args.producer, args.admin)
    print(roles_script(args.schema, names, create_roles=not args.no_create), end="")
    return 0


def print_migrations(database_url: str | None, schema: str) -> int:
    """Print the migrations the database has not applied yet (all of them for a new one)."""
    engine = Engine(Settings(database_url=resolve_database_url(database_url), schema=schema))
    try:
        print(engine.admin.migration_sql(), end="")
    finally:
        engine.close()
    return 0
