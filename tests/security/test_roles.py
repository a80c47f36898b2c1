"""Least privilege on PostgreSQL: the roles `pgtasks roles` prints. The owner migrates; the
worker runs tasks, steps, canvases and schedules but can create nothing; the producer
enqueues and reads results but can change no row. Also `pgtasks migrate --print-sql`."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import psycopg
import pytest

from pgtasks import App, Client
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler import Beat, ManualClock, admin, define_schedule
from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.provisioning import RoleNames, roles_script
from pgtasks.sysdb.records import ClaimParams
from tests.support.cli import run_pgtasks
from tests.support.inprocess import running_worker, wait_for
from tests.support.schemas import (
    WORKER_ROLE,
    drop_schema,
    new_schema_name,
    with_schema,
    with_user,
    worker_role_url,
)

PASSWORD = "s3cret-pw"


def as_role(server_url: str, role: str, schema: str) -> str:
    """The server URL with another user (and password), on ``schema``."""
    return with_schema(with_user(server_url, role, PASSWORD), schema)


@dataclass
class Roles:
    schema: str
    owner: str
    worker: str
    producer: str


@pytest.fixture
def roles(pg_server_url: str) -> Iterator[Roles]:
    """Fresh roles and schema, made by the script `pgtasks roles` prints, then migrated by
    the owner; dropped afterwards (roles are global to the server)."""
    suffix = uuid.uuid4().hex[:8]
    names = RoleNames(f"o_{suffix}", f"w_{suffix}", f"p_{suffix}")
    schema = f"r_{suffix}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(roles_script(schema, names))
        for role in (names.owner, names.worker, names.producer):
            conn.execute(f"ALTER ROLE \"{role}\" PASSWORD '{PASSWORD}'")
    owner_db = open_system_database(as_role(pg_server_url, names.owner, schema))
    assert owner_db.migrate()  # the owner creates every table
    owner_db.close()
    try:
        yield Roles(
            schema,
            as_role(pg_server_url, names.owner, schema),
            as_role(pg_server_url, names.worker, schema),
            as_role(pg_server_url, names.producer, schema),
        )
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            for role in (names.owner, names.worker, names.producer):
                conn.execute(f'DROP OWNED BY "{role}"')
                conn.execute(f'DROP ROLE "{role}"')


def ddl_refused(url: str, schema: str) -> bool:
    dsn = url.split("?")[0]
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            conn.execute(f'CREATE TABLE "{schema}".intruder (a int)')
        except psycopg.errors.InsufficientPrivilege:
            return True
    return False


def test_the_worker_role_runs_everything_and_creates_nothing(roles: Roles) -> None:
    app = App("roles", database_url=roles.worker)

    @app.step
    def double(x: int) -> int:
        return 2 * x

    @app.task(name="roles.work")
    def work(x: int) -> int:
        return double(x) + 1

    try:
        with running_worker(app):
            handle = work.delay(20)
            assert handle.get(timeout=60) == 41
            [step] = app.engine.admin.steps(handle.id)
            assert step.function_name.endswith("double") and step.function_id == 1
            clock = ManualClock(dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.timezone.utc))
            admin.store(app.engine, [define_schedule("tick", "roles.work", every=60, args=[1])], clock)
            clock.advance(60)
            [fired] = Beat(app.engine, clock).tick().fired
            wait_for(lambda: app.AsyncResult(fired).ready(), timeout=60, what="the scheduled task")
            assert app.AsyncResult(fired).get() == 3
        assert ddl_refused(roles.worker, roles.schema)
    finally:
        app.close()


def test_the_producer_role_enqueues_and_reads_but_changes_nothing(roles: Roles) -> None:
    producer = Client(roles.producer)
    worker = App("roles", database_url=roles.worker)

    @worker.task(name="roles.add")
    def add(x: int, y: int) -> int:
        return x + y

    try:
        handle = producer.enqueue("roles.add", [2, 3])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            producer.engine.worker_api.claim(ClaimParams("p", "v", ("default",), 1))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            producer.engine.admin.cancel(handle.id)  # no UPDATE: it cannot revoke either
        with running_worker(worker):
            assert producer.AsyncResult(handle.id).get(timeout=60) == 5
        assert ddl_refused(roles.producer, roles.schema)
    finally:
        producer.close()
        worker.close()


def test_a_role_that_cannot_migrate_gets_a_clear_error(pg_server_url: str, roles: Roles) -> None:
    other_schema = roles.schema + "_new"
    stale = open_system_database(roles.worker.replace(f"schema={roles.schema}", f"schema={other_schema}"))
    try:
        with pytest.raises(ConfigurationError, match=r"run `pgtasks migrate` as the role that owns"):
            stale.migrate()
    finally:
        stale.close()


def test_migrate_print_sql_is_what_migrate_would_run(pg_server_url: str) -> None:
    schema = new_schema_name("m_")
    url = with_schema(pg_server_url, schema)
    argv = ("migrate", "--print-sql", "--database-url", url)
    printed = run_pgtasks(*argv, "--schema", schema, timeout=60, check=True).stdout
    assert printed.startswith("BEGIN;") and printed.rstrip().endswith("COMMIT;")
    try:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(printed)
        db = open_system_database(url)
        assert db.migrate() == []  # the script recorded every migration
        assert [m.version for m in db.migrations_applied()][-1] >= 6
        db.close()
    finally:
        drop_schema(pg_server_url, schema)


def test_the_worker_role_of_the_test_suite_cannot_create(pg_server_url: str) -> None:
    """`make test` runs the system database suites again as this role (PGTASKS_TEST_AS_ROLE)."""
    schema = new_schema_name("w_")
    url = worker_role_url(pg_server_url, schema)
    try:
        assert urlsplit(url).username == WORKER_ROLE
        db = open_system_database(url)
        assert db.migrate() == [] and db.now_ms() > 0
        db.close()
        assert ddl_refused(url, schema)
    finally:
        drop_schema(pg_server_url, schema)
