"""The server's state between two measured runs, the same for every system of ``make bench``.

pgtasks' runs and pgqueuer's share one PostgreSQL server, one after the other. Without care,
a run inherits what the runs before it left: their dirty pages, which a checkpoint falling
inside the run writes on the run's time, and their tables in the server's buffers. So every
run of either system begins with a ``CHECKPOINT`` (:func:`settle`), before it writes
anything: the timed checkpoints count from it (``checkpoint_timeout``, minutes, far longer
than a run), and a run's own pages are written by the run alone. Each run ends by dropping
what it created (:func:`drop_schema` for pgtasks' schema, :func:`drop_database` for
pgqueuer's database).

The checkpoint comes first, not between a drain's enqueue and its drain: after a checkpoint
the first change to each page logs the whole page, so one there would bill the drain for
images of the pages the enqueue had just written (679 for 20,000 no-op tasks on threads
``-c 8``, 10% more WAL; none with the checkpoint first).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from pgtasks.sysdb.urls import parse_database_url
from tests.support import schemas

_refused: list[str] = []  # the checkpoint's refusal, said once


def settle(url: str) -> bool:
    """Write every dirty page now, at the start of a run, so that no checkpoint falls inside
    it. Returns False (saying why, once) where the role may not run ``CHECKPOINT``
    (PostgreSQL 15: a superuser or a member of ``pg_checkpoint``); the run goes on."""
    target = parse_database_url(url)
    if target.dialect != "postgres":
        return False
    try:
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege as exc:
        if not _refused:
            _refused.append(str(exc))
            print(f"bench: runs start without a CHECKPOINT ({exc}); figures vary more", flush=True)
        return False
    return True


def drop_schema(url: str) -> None:
    """Drop the schema a pgtasks run created (the ``?schema=`` of ``url``), with its tasks."""
    target = parse_database_url(url)
    if target.dialect == "postgres":
        schemas.drop_schema(target.dsn, target.schema)


def drop_database(server_url: str, dsn: str) -> None:
    """Drop the database ``dsn`` names (a pgqueuer run's), connected through ``server_url``'s
    database; its sessions, if any are left, are ended first."""
    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(parse_database_url(server_url).dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(str(name))))
