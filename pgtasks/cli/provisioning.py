"""``pgtasks migrate`` (or, with ``--print-sql``, the SQL it would run) and ``pgtasks roles``:
the schema, and SQL for a database administrator."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pgtasks.cli.database import SCHEMA_HELP, configured_engine, configured_url
from pgtasks.cli.options import add_command
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
from pgtasks.sysdb.urls import redact_url, resolve_database_url


def add_migrate_command(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``migrate`` on the main parser's subcommands."""
    migrate = add_command(sub, "migrate", run_migrate, parents, help="create or upgrade the pgtasks schema")
    migrate.add_argument("--database-url", help="default: PGTASKS_DATABASE_URL (no SQLite fallback)")
    migrate.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    migrate.add_argument(
        "--print-sql", action="store_true", help="print the pending migrations as SQL instead of running them"
    )


def run_migrate(args: argparse.Namespace) -> int:
    """Apply the pending migrations (or print them) and say which."""
    if args.print_sql:
        return print_migrations(configured_url(args.database_url), args.schema)
    engine = configured_engine(args.database_url, args.schema)
    try:
        applied = engine.admin.migrate()
    finally:
        engine.close()
    url = redact_url(configured_url(args.database_url))
    print(f"{url}: applied {[m.version for m in applied]}" if applied else f"{url}: up to date")
    return 0


def add_roles_command(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``roles`` on the main parser's subcommands."""
    roles = add_command(
        sub,
        "roles",
        print_roles,
        parents,
        help="print the SQL that creates least-privilege roles (PostgreSQL)",
    )
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
