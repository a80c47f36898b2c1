"""SQL for a database administrator: the migrations as a script (``pgtasks migrate
--print-sql``), and least-privilege roles (``pgtasks roles``).

Four roles (docs/security.md has the grant table):

- the **owner** runs ``pgtasks migrate``: it owns the schema and every table (DDL), and is
  the only role that writes ``pgtasks_migrations``;
- the **worker** (``pgtasks worker``, ``pgtasks beat``, and apps that send canvases or revoke
  tasks) reads and writes rows, and can create nothing;
- the **admin** (the CLI's management commands, the dashboard: cancel, resume, fork, queue
  settings, schedules) has the worker's row privileges under its own name and password, so
  operators' credentials are not the workers';
- the **producer** (a web app that only enqueues and reads results) can read every row and
  insert only tasks waiting to run: row-level security (migration 0011) refuses any other
  new row from a role without the UPDATE privilege (a SUCCESS row, a step record, an event,
  a schedule, an executor, a migration), and it can change no row.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgtasks.sysdb.identifiers import quote_identifier
from pgtasks.sysdb.sqlfiles import load_migrations, pending_migrations

MIGRATIONS_TABLE = "pgtasks_migrations"
NOW_MS = "(extract(epoch from now()) * 1000)::bigint"


def migration_script(dialect: str, schema: str, applied: set[int]) -> str:
    """The migrations whose numbers are not ``applied``, as one script that also records
    them, in one transaction (what ``pgtasks migrate`` would run)."""
    migrations = pending_migrations(load_migrations(dialect), applied)
    if not migrations:
        return "-- the schema is up to date: nothing to run\n"
    if dialect == "postgres":
        prefix, now = quote_identifier(schema, "schema name") + ".", NOW_MS
        header = [f"CREATE SCHEMA IF NOT EXISTS {prefix[:-1]};"]
    else:
        prefix, now = "", "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
        header = []
    lines = ["BEGIN;", *header]
    lines.append(
        f"CREATE TABLE IF NOT EXISTS {prefix}{MIGRATIONS_TABLE} "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);"
    )
    for migration in migrations:
        lines.append(f"\n-- migration {migration.version}: {migration.name}")
        lines.append(migration.sql.replace("__schema__", prefix[:-1]).strip())
        lines.append(
            f"INSERT INTO {prefix}{MIGRATIONS_TABLE} VALUES ({migration.version}, '{migration.name}', {now});"
        )
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


DEFAULT_OWNER, DEFAULT_WORKER, DEFAULT_PRODUCER = "pgtasks_owner", "pgtasks_worker", "pgtasks_producer"
DEFAULT_ADMIN = "pgtasks_admin"


@dataclass(frozen=True)
class RoleNames:
    """The role names (validated and quoted when the script is built)."""

    owner: str = DEFAULT_OWNER
    worker: str = DEFAULT_WORKER
    producer: str = DEFAULT_PRODUCER
    admin: str = DEFAULT_ADMIN


def roles_script(schema: str, names: RoleNames | None = None, create_roles: bool = True) -> str:
    """GRANTs (and optionally CREATE ROLEs) giving each role exactly what it needs in
    ``schema``. Run it as a superuser, or as a role allowed to create roles and schemas;
    then run ``pgtasks migrate`` as the owner (default privileges cover its later tables)."""
    names = names or RoleNames()
    s = quote_identifier(schema, "schema name")
    owner = quote_identifier(names.owner, "role name")
    worker = quote_identifier(names.worker, "role name")
    producer = quote_identifier(names.producer, "role name")
    admin = quote_identifier(names.admin, "role name")
    lines = ["BEGIN;"]
    if create_roles:
        lines += ["-- Set passwords afterwards: ALTER ROLE name PASSWORD '...';"]
        lines += [f"CREATE ROLE {role} LOGIN;" for role in (owner, worker, admin, producer)]
    lines += [
        "-- The owner runs `pgtasks migrate`: it owns the schema and every table in it. Row-level",
        "-- security (migration 0011) keeps pgtasks_migrations the owner's alone, and limits the",
        "-- producer's INSERTs to tasks waiting to run.",
        f"CREATE SCHEMA IF NOT EXISTS {s} AUTHORIZATION {owner};",
        f"GRANT USAGE ON SCHEMA {s} TO {worker}, {admin}, {producer};",
    ]
    for role, tables, comment in (
        (worker, "SELECT, INSERT, UPDATE, DELETE", "The worker reads and writes rows; it creates nothing."),
        (
            admin,
            "SELECT, INSERT, UPDATE, DELETE",
            "The admin (CLI, dashboard) manages rows; it creates nothing.",
        ),
        (producer, "SELECT, INSERT", "The producer enqueues and reads; it inserts waiting tasks only."),
    ):
        lines += [
            f"-- {comment}",
            f"GRANT {tables} ON ALL TABLES IN SCHEMA {s} TO {role};",
            f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {role};",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {s} GRANT {tables} ON TABLES TO {role};",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {s}",
            f"    GRANT USAGE, SELECT ON SEQUENCES TO {role};",
        ]
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"
