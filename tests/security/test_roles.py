"""Least privilege on PostgreSQL: the roles `pgtasks roles` prints (issue 17: each forgery
from the issue, tried as each role, is refused). The owner migrates; the
worker runs tasks, steps, canvases and schedules but can create nothing; the producer
enqueues and reads results but can change no row. Also `pgtasks migrate --print-sql`."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from pgtasks import App, Client
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler import Beat, ManualClock, admin, define_schedule
from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.provisioning import RoleNames, roles_script
from pgtasks.sysdb.records import ClaimParams, Status, WaitParams, WaitState
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
    admin: str


@pytest.fixture
def roles(pg_server_url: str) -> Iterator[Roles]:
    """Fresh roles and schema, made by the script `pgtasks roles` prints, then migrated by
    the owner; dropped afterwards (roles are global to the server)."""
    suffix = uuid.uuid4().hex[:8]
    names = RoleNames(f"o_{suffix}", f"w_{suffix}", f"p_{suffix}", f"a_{suffix}")
    schema = f"r_{suffix}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(roles_script(schema, names))
        for role in (names.owner, names.worker, names.producer, names.admin):
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
            as_role(pg_server_url, names.admin, schema),
        )
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            for role in (names.owner, names.worker, names.producer, names.admin):
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


# -- forgeries (issue 17, item 2) ------------------------------------------------------
NOW = "(extract(epoch from now()) * 1000)::bigint"


def run(url: str, sql: str, params: tuple[Any, ...] = ()) -> int:
    """Run ``sql`` (``S.`` names the schema) as the URL's role; the rows it changed."""
    dsn, schema = url.split("?schema=")
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql.replace("S.", f'"{schema}".'), params).rowcount


def forged_step(url: str, task_id: str) -> None:
    """A step record that would make a replay of ``task_id`` return a forged value."""
    run(
        url,
        "INSERT INTO S.operation_outputs (workflow_uuid, function_id, function_name, output)"
        " VALUES (%s, 1, 'roles.double', %s)",
        (task_id, json.dumps(666)),
    )


def forged_success(url: str, task_id: str) -> None:
    """A SUCCESS row under an id that a later genuine enqueue would then return unrun."""
    run(
        url,
        "INSERT INTO S.workflow_status (workflow_uuid, status, name, inputs, queue_name, output,"
        f" created_at, updated_at) VALUES (%s, 'SUCCESS', 'roles.add', '[]', 'default', '666', {NOW}, {NOW})",
        (task_id,),
    )


def forged_schedule(url: str) -> None:
    run(
        url,
        "INSERT INTO S.workflow_schedules (schedule_id, schedule_name, workflow_name, schedule)"
        " VALUES (%s, 'evil', 'roles.add', '* * * * *')",
        (str(uuid.uuid4()),),
    )


def forged_migration(url: str) -> None:
    run(url, f"INSERT INTO S.pgtasks_migrations VALUES (999, 'stop everyone', {NOW})")


def forged_executor(url: str) -> None:
    run(
        url,
        "INSERT INTO S.executors (executor_id, hostname, pid, application_version, started_at,"
        f" last_heartbeat) VALUES ('evil', 'h', 1, 'v', {NOW}, {NOW})",
    )


def victim(roles: Roles) -> str:
    client = Client(roles.worker)
    task_id = client.enqueue("roles.add", [2, 3]).id
    client.close()
    return task_id


@pytest.mark.parametrize("forge", ["step", "success", "schedule", "migration", "executor"])
def test_the_producer_cannot_forge(roles: Roles, forge: str) -> None:
    attempt = {
        "step": lambda: forged_step(roles.producer, victim(roles)),
        "success": lambda: forged_success(roles.producer, "later-" + uuid.uuid4().hex),
        "schedule": lambda: forged_schedule(roles.producer),
        "migration": lambda: forged_migration(roles.producer),
        "executor": lambda: forged_executor(roles.producer),
    }[forge]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        attempt()


@pytest.mark.parametrize("role", ["worker", "admin", "producer"])
def test_only_the_owner_writes_the_migrations_table(roles: Roles, role: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        forged_migration(getattr(roles, role))
    for change in ("UPDATE S.pgtasks_migrations SET name = 'x'", "DELETE FROM S.pgtasks_migrations"):
        if role == "producer":  # no UPDATE or DELETE privilege at all
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                run(roles.producer, change)
        else:  # row-level security shows them no row to change
            assert run(getattr(roles, role), change) == 0
    assert run(roles.owner, "SELECT 1 FROM S.pgtasks_migrations WHERE name = 'x' OR version = 999") == 0
    # Every process still starts: the owner's table is intact.
    client = Client(roles.producer)
    assert client.enqueue("roles.add", [1, 1]).status == "ENQUEUED"
    client.close()


def test_a_forged_success_cannot_preempt_a_genuine_enqueue(roles: Roles) -> None:
    task_id = "genuine-" + uuid.uuid4().hex
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        forged_success(roles.producer, task_id)
    worker = App("roles", database_url=roles.worker)

    @worker.task(name="roles.add")
    def add(x: int, y: int) -> int:
        return x + y

    producer = Client(roles.producer)
    try:
        handle = producer.enqueue("roles.add", [2, 3], task_id=task_id)
        with running_worker(worker):
            assert handle.get(timeout=60) == 5  # it ran: nothing answered in its place
        # A producer may still enqueue delayed work, and read results, events and queues.
        assert producer.enqueue("roles.add", [1, 2], countdown=3600).status == "DELAYED"
        assert producer.engine.admin.queues() is not None
    finally:
        producer.close()
        worker.close()


def test_the_worker_and_admin_roles_still_do_their_work(roles: Roles) -> None:
    forged_schedule(roles.admin)  # the admin manages schedules (the CLI's `schedule` commands)
    for role in ("worker", "admin"):
        client = Client(getattr(roles, role))
        handle = client.enqueue("roles.add", [1, 2])
        assert client.engine.admin.cancel(handle.id)  # the CLI's cancel
        client.close()


def test_the_producer_sends_messages_and_wakes_their_receiver_but_consumes_nothing(roles: Roles) -> None:
    worker_db = open_system_database(roles.worker)
    producer = Client(roles.producer)
    try:
        task_id = producer.enqueue("roles.wait").id
        [claimed] = worker_db.tasks_claim(ClaimParams("w1", "v1", ("default",), 1))
        deadline = worker_db.now_ms() + 60_000
        waiting = worker_db.task_wait(
            WaitParams(task_id, "w1", claimed.claim_token, deadline, 500, topic="t")
        )
        assert waiting.state is WaitState.SUSPENDED
        assert producer.send(task_id, {"paid": True}, topic="t", idempotency_key="order-1")
        woken = worker_db.task_get(task_id)  # through pgtasks_wake(): it may change no task itself
        assert woken is not None and woken.status is Status.ENQUEUED
        for consume in (
            lambda: run(roles.producer, "UPDATE S.notifications SET consumed = TRUE"),
            lambda: run(
                roles.producer,
                "INSERT INTO S.notifications (message_uuid, destination_uuid, topic, message,"
                f" created_at_epoch_ms, consumed) VALUES ('x', %s, 't', '1', {NOW}, TRUE)",
                (task_id,),
            ),
            lambda: run(
                roles.producer,
                "INSERT INTO S.streams (workflow_uuid, key, position, value, function_id)"
                " VALUES (%s, 'k', 0, '1', 1)",
                (task_id,),
            ),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                consume()
        assert [m.consumed for m in worker_db.messages_of(task_id)] == [False]
    finally:
        producer.close()
        worker_db.close()
