"""pgtasks as a managed database gives it: an ordinary role (no superuser, no CREATEDB, no
CREATEROLE) that owns one database. `pgtasks migrate` and everything after it work as that
role: a worker with durable steps, beat, the management and dashboard reads, retention."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from pgtasks import App
from pgtasks.scheduler.beat import Beat
from pgtasks.scheduler.definitions import ScheduleDefinition
from pgtasks.scheduler.timing import CronTiming
from tests.support.cli import run_pgtasks
from tests.support.inprocess import running_worker, wait_for


@pytest.fixture
def owner_url(pg_server_url: str) -> Iterator[str]:
    """A fresh database owned by a fresh ordinary role; its URL connects as that role."""
    name = f"own_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'owner-pw' NOSUPERUSER NOCREATEDB NOCREATEROLE")
        conn.execute(f"CREATE DATABASE {name} OWNER {name}")
    parts = urlsplit(pg_server_url)
    netloc = f"{name}:owner-pw@{parts.hostname}:{parts.port}"
    try:
        yield urlunsplit((parts.scheme, netloc, f"/{name}", "", ""))
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {name}")


def test_everything_runs_as_an_ordinary_role_owning_one_database(owner_url: str) -> None:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user"
        )
        assert row.fetchone() == (False, False, False)
    migrated = run_pgtasks("migrate", "--database-url", owner_url)
    assert migrated.returncode == 0, migrated.stderr
    assert "applied [1, 2, 3" in migrated.stdout and "owner-pw" not in migrated.stdout + migrated.stderr

    app = App("owned", database_url=owner_url, poll_interval=0.05)

    @app.step(name="double")
    def double(x: int) -> int:
        return 2 * x

    @app.task(name="owned.work")
    def work(x: int) -> int:
        return double(x) + 1

    with running_worker(app):
        assert [work.delay(i).get(timeout=30) for i in range(3)] == [1, 3, 5]
    listing = run_pgtasks("tasks", "--database-url", owner_url, "list")
    assert listing.returncode == 0 and "owned.work" in listing.stdout, listing.stderr
    admin = app.engine.admin
    admin.queue_stats()  # the dashboard's reads
    wait_for(lambda: sum(admin.prunable(0).values()) == 3, what="three prunable tasks")
    assert admin.prune(0) == {"default": 3}  # retention deletes as the owner too
    beat = Beat(app.engine)
    every_minute = ScheduleDefinition("every-minute", "owned.work", CronTiming.parse("* * * * *"), (1,))
    stored = beat.sync([every_minute], "config:owned")
    assert [r.name for r in stored] == ["every-minute"]
    app.close()
