"""An operator's lock, a role's timeouts and a read-only server must not hurt a healthy task
(issue 25, items 1 and 2). Real worker processes against the suite's PostgreSQL; the locks are
held from a second connection, the timeouts are the role's own settings.

- Rows an operator holds (``SELECT ... FOR UPDATE``) on every table the worker's maintenance
  touches stall neither the lease nor the tasks around them: the heartbeat stays fresh, due
  countdown tasks start, and the held rows are dealt with once released.
- With ``lock_timeout`` on the worker's role, a task whose row is held for a while succeeds
  once, each step body run once, with no misleading line in the log.
- A role whose transactions are read-only: the worker says so in one line and waits; once the
  role may write again, it runs its tasks.
- A prefork child's soft time limit that falls while its checkpoint waits on a lock is raised
  when the wait ends, not in the middle of the statement.
- Ctrl-C on a program whose ``delay()`` waits behind an operator's table lock ends the wait at
  once: the insert is cancelled on the server, and no task is left behind.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from pgtasks import Client, SoftTimeLimitExceeded, TimeLimitExceeded
from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.urls import parse_database_url, redact_url
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of, text_of
from tests.support.processes import stop, worker_process
from tests.support.schemas import with_schema, with_user

APP = "tests.faults.apps.operator_app"
LEASE = 1.0  # seconds; every hold below is three leases long
HOLD = 3 * LEASE


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


@pytest.fixture
def role(pg_server_url: str) -> Iterator[str]:
    """A login role of this test's own (its settings are the test's to change), dropped after."""
    name = "ops_" + secrets.token_hex(4)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN SUPERUSER")
    try:
        yield name
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(  # its sessions first: a worker left behind must not keep the role
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [name]
            )
            conn.execute(f"DROP ROLE IF EXISTS {name}")


def _worker(url: str, tmp_path: Path, name: str = "w1", pool: str = "threads", *args: str):  # type: ignore[no-untyped-def]
    return worker_process(
        url,
        tmp_path / "ledger",
        name,
        app=APP,
        lease_seconds=LEASE,
        pool=pool,
        output=tmp_path / f"{name}.log",
        extra_args=args,
    )


def _migrated_with(pg_url: str, pg_server_url: str, role: str, setting: str) -> Client:
    """A client of the schema's owner, the schema migrated by it, and ``setting`` (``name =
    value``) made the role's own: the worker runs as the role."""
    client = Client(pg_url, pool_size=2)
    client.engine.admin.migrate()
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f"ALTER ROLE {role} SET {setting}")
    return client


def _heartbeat_age_ms(conn: psycopg.Connection, schema: str, executor_id: str) -> int:
    row = conn.execute(
        "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint - last_heartbeat "
        f'FROM "{schema}".executors WHERE executor_id = %s',
        [executor_id],
    ).fetchone()
    assert row is not None, f"executor {executor_id} has no row"
    return int(row[0])


def _status(conn: psycopg.Connection, schema: str, task_id: str) -> str:
    row = conn.execute(
        f'SELECT status FROM "{schema}".workflow_status WHERE workflow_uuid = %s', [task_id]
    ).fetchone()
    return row[0] if row else "MISSING"


def test_rows_an_operator_holds_stall_no_lease_and_no_other_task(
    pg_url: str, pg_server_url: str, tmp_path: Path
) -> None:
    schema = _schema(pg_url)
    worker = _worker(pg_url, tmp_path)
    client = Client(pg_url, pool_size=2)
    try:
        with psycopg.connect(pg_server_url, autocommit=True) as look:
            wait_for(lambda: "ready." in text_of(tmp_path / "w1.log"), 60, "the worker to start")
            # What the maintenance round deals with, each row held by the operator below: a due
            # countdown task, a waiting task that expires, a task of an executor that is gone,
            # a stale executor row, and the queue's settings row.
            due = client.enqueue("ops.steps", [1], countdown=0.3).id
            expiring = client.enqueue("ops.steps", [1], queue="nobody", expires=0.3).id
            orphan = client.enqueue("ops.steps", [1], queue="nobody").id
            look.execute(
                f"UPDATE \"{schema}\".workflow_status SET status = 'PENDING', executor_id = 'gone' "
                "WHERE workflow_uuid = %s",
                [orphan],
            )
            look.execute(
                f'INSERT INTO "{schema}".executors SELECT * FROM jsonb_populate_record('
                f'NULL::"{schema}".executors, (SELECT to_jsonb(e) FROM "{schema}".executors e '
                'WHERE executor_id = \'w1\') || \'{"executor_id": "stale", "last_heartbeat": 0}\')'
            )
            with psycopg.connect(pg_server_url) as operator:
                operator.execute(
                    f'SELECT 1 FROM "{schema}".workflow_status WHERE workflow_uuid = ANY(%s) FOR UPDATE',
                    [[due, expiring, orphan]],
                )
                operator.execute(
                    f"SELECT 1 FROM \"{schema}\".executors WHERE executor_id = 'stale' FOR UPDATE"
                )
                operator.execute(f'SELECT 1 FROM "{schema}".queues FOR UPDATE')
                held_until = time.monotonic() + HOLD
                others = [client.enqueue("ops.steps", [1], countdown=0.2).id for _ in range(2)]
                ages = []
                while time.monotonic() < held_until:
                    ages.append(_heartbeat_age_ms(look, schema, "w1"))
                    time.sleep(0.05)
                finished = [_status(look, schema, t) for t in others]
                operator.rollback()
            assert max(ages) < LEASE * 1000, f"heartbeat ages while the rows were held: {ages}"
            assert finished == ["SUCCESS", "SUCCESS"], finished  # countdown tasks ran meanwhile
            wait_for(lambda: _status(look, schema, due) == "SUCCESS", 30, "the held due task to run")
            wait_for(lambda: _status(look, schema, expiring) == "CANCELLED", 30, "the held task to expire")
            wait_for(
                lambda: _status(look, schema, orphan) == "ENQUEUED", 30, "the held orphan to be recovered"
            )
            stale = look.execute(
                f"SELECT count(*) FROM \"{schema}\".executors WHERE executor_id = 'stale'"
            ).fetchone()
            assert stale == (0,)
    finally:
        client.close()
        stop(worker)
    out = text_of(tmp_path / "w1.log")
    assert "Traceback" not in out, out


def test_a_lock_timeout_on_the_role_is_retried_not_the_tasks_failure(
    pg_url: str, pg_server_url: str, role: str, tmp_path: Path
) -> None:
    schema = _schema(pg_url)
    client = _migrated_with(pg_url, pg_server_url, role, "lock_timeout = '200ms'")
    worker = _worker(with_user(pg_url, role), tmp_path)
    ledger = tmp_path / "ledger"
    try:
        with psycopg.connect(pg_server_url, autocommit=True) as look:
            task = client.enqueue("ops.steps", [3, 0.3])
            wait_for(lambda: f"{task.id} start" in lines_of(ledger), 60, "the task to start")
            # Its row held through its checkpoints and its completion, three leases long.
            with psycopg.connect(pg_server_url) as operator:
                operator.execute(
                    f'SELECT 1 FROM "{schema}".workflow_status WHERE workflow_uuid = %s FOR UPDATE', [task.id]
                )
                held_until = time.monotonic() + HOLD
                ages = []
                while time.monotonic() < held_until:
                    ages.append(_heartbeat_age_ms(look, schema, "w1"))
                    time.sleep(0.05)
                operator.rollback()
            assert task.get(timeout=60) == 3
            assert max(ages) < LEASE * 1000, f"heartbeat ages while the row was held: {ages}"
    finally:
        client.close()
        stop(worker)
    runs = [line.split(" ", 1)[1] for line in lines_of(ledger) if line.startswith(task.id)]
    assert sorted(runs) == ["start", "work0", "work1", "work2"], runs  # each body once
    out = text_of(tmp_path / "w1.log")
    assert "refused a statement for now" in out, out  # said once per episode, as what it is
    for misleading in (
        "LockNotAvailable",
        "could not write",
        "cancelled or taken over",
        "released",
        "Traceback",
    ):
        assert misleading not in out, out


def test_a_soft_limit_during_a_held_checkpoint_is_raised_once_it_committed(
    pg_url: str, pg_server_url: str, tmp_path: Path
) -> None:
    """The child's SIGALRM handler runs between Python instructions: a soft limit that falls
    while the first checkpoint waits on the task row's lock is raised when the statement
    returns. The task fails with SoftTimeLimitExceeded after the operator lets go, its first
    step recorded, its second never started."""
    schema = _schema(pg_url)
    ledger = tmp_path / "ledger"
    worker = _worker(pg_url, tmp_path, "w1", "prefork", "--soft-time-limit", "1.5")
    client = Client(pg_url, pool_size=2)
    try:
        with psycopg.connect(pg_server_url, autocommit=True) as look:
            wait_for(lambda: "ready." in text_of(tmp_path / "w1.log"), 60, "the worker to start")
            task = client.enqueue("ops.steps", [2, 1.0])
            wait_for(lambda: f"{task.id} start" in lines_of(ledger), 60, "the task to start")
            with psycopg.connect(pg_server_url) as operator:  # within its first step's second
                operator.execute(
                    f'SELECT 1 FROM "{schema}".workflow_status WHERE workflow_uuid = %s FOR UPDATE', [task.id]
                )
                time.sleep(HOLD)  # the hold itself, past the soft limit (1.5 s after the start)
                held = _status(look, schema, task.id)
                operator.rollback()
            with pytest.raises(SoftTimeLimitExceeded):
                task.get(timeout=60)
            recorded = look.execute(
                f'SELECT function_id FROM "{schema}".operation_outputs WHERE workflow_uuid = %s', [task.id]
            ).fetchall()
    finally:
        client.close()
        stop(worker)
    assert held == "PENDING"  # no outcome while its checkpoint waited
    assert recorded == [(1,)]
    runs = [line.split(" ", 1)[1] for line in lines_of(ledger) if line.startswith(task.id)]
    assert runs == ["start", "work0"], runs
    out = text_of(tmp_path / "w1.log")
    assert out.count("raised unexpected: SoftTimeLimitExceeded") == 1, out  # the task's own failure
    for misleading in ("could not write", "cancelled or taken over", "released", "OperationalError"):
        assert misleading not in out, out


PRODUCER = """
import sys
from pgtasks import Client
client = Client(sys.argv[1], pool_size=1)
client.enqueue("ops.steps", [1])  # the schema checked, the session opened, the insert prepared
print("ready", flush=True)
sys.stdin.readline()
client.enqueue("ops.steps", [1])
print("sent", flush=True)
"""


def test_ctrl_c_ends_a_delay_held_by_an_operators_lock(pg_url: str, pg_server_url: str) -> None:
    schema = _schema(pg_url)
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, pg_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert producer.stdout is not None and producer.stdin is not None
        assert producer.stdout.readline() == "ready\n"
        with (
            psycopg.connect(pg_server_url, autocommit=True) as look,
            psycopg.connect(pg_server_url) as operator,
        ):
            operator.execute(f'LOCK TABLE "{schema}".workflow_status IN ACCESS EXCLUSIVE MODE')
            producer.stdin.write("go\n")
            producer.stdin.flush()
            wait_for(lambda: _inserts_waiting(look, schema) == 1, 60, "the insert to wait for the lock")
            producer.send_signal(signal.SIGINT)
            out, err = producer.communicate(timeout=60)  # the lock still held
            waiting_after = _inserts_waiting(look, schema)
            operator.rollback()
            count = look.execute(f'SELECT count(*) FROM "{schema}".workflow_status').fetchone()
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.communicate()
    assert producer.returncode != 0 and "KeyboardInterrupt" in err, err
    assert "sent" not in out
    assert waiting_after == 0  # cancelled on the server, not left waiting
    assert count == (1,)  # only the first task


def _inserts_waiting(look: psycopg.Connection, schema: str) -> int:
    row = look.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
        [f"%INSERT INTO %{schema}%.workflow_status%"],
    ).fetchone()
    return int(row[0]) if row else 0


def test_a_read_only_server_is_waited_for_in_one_line(
    pg_url: str, pg_server_url: str, role: str, tmp_path: Path
) -> None:
    client = _migrated_with(pg_url, pg_server_url, role, "default_transaction_read_only = on")
    log = tmp_path / "w1.log"
    worker = _worker(with_user(pg_url, role), tmp_path)
    try:
        wait_for(lambda: "is read-only" in text_of(log), 60, "the worker to say the server is read-only")
        assert worker.poll() is None, text_of(log)  # waiting, not gone
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute(f"ALTER ROLE {role} RESET default_transaction_read_only")
        assert client.enqueue("ops.steps", [2]).get(timeout=60) == 1
    finally:
        client.close()
        stop(worker)
    out = text_of(log)
    assert out.count("is read-only") <= 2, out  # the outage's warning (and the start-up's)
    assert "Traceback" not in out and "ReadOnlySqlTransaction" not in out, out


def test_a_blocked_event_loop_meets_its_hard_time_limit(pg_url: str, tmp_path: Path) -> None:
    """Issue 25, item 4: ``time.sleep(30)`` inside ``async def`` with ``--time-limit 2``. The
    watchdog names the task, fails it with TimeLimitExceeded while it still blocks, gives back
    the other task of the loop and replaces the process (same pid), which runs that task again.
    Then (item 5) a dict shaped like a codec tag goes through that worker unchanged."""
    log, ledger = tmp_path / "w1.log", tmp_path / "ledger"
    worker = _worker(pg_url, tmp_path, "w1", "asyncio", "--time-limit", "2")
    client = Client(pg_url, pool_size=2)
    try:
        wait_for(lambda: "ready." in text_of(log), 60, "the worker to start")
        napping = client.enqueue("ops.nap", [1.5])
        wait_for(lambda: f"{napping.id} nap" in lines_of(ledger), 30, "the other task to start")
        blocking = client.enqueue("ops.block_loop", [30])
        with pytest.raises(TimeLimitExceeded):
            blocking.get(timeout=60)
        assert f"{blocking.id} unblocked" not in lines_of(ledger)  # failed while it still blocked
        assert napping.get(timeout=60) == "rested"  # given back, run again by the new process
        assert lines_of(ledger).count(f"{napping.id} nap") == 2
        assert worker.poll() is None
        tag_shaped = {"__type__": "bytes", "__value__": "aGk="}
        assert client.enqueue("ops.echo", [tag_shaped]).get(timeout=30) == tag_shaped
        assert client.enqueue("ops.type_of", [tag_shaped]).get(timeout=30) == "dict"
    finally:
        client.close()
        stop(worker)
    out = text_of(log)
    assert "blocked for" in out and f"ops.block_loop[{blocking.id}]" in out, out
    assert "replacing the worker process" in out and out.count(" ready.") == 2, out
    assert "Traceback" not in out, out


def test_a_roles_idle_session_timeout_ends_no_listener(
    pg_url: str, pg_server_url: str, role: str, tmp_path: Path
) -> None:
    """Managed databases set ``idle_session_timeout``: the worker's LISTEN session, idle by
    design, was ended at each timeout (a warning each time, notifications lost meanwhile)."""
    client = _migrated_with(pg_url, pg_server_url, role, "idle_session_timeout = '300ms'")
    log = tmp_path / "w1.log"
    worker = _worker(with_user(pg_url, role), tmp_path)
    producer = Client(with_user(pg_url, role), pool_size=1)
    try:
        wait_for(lambda: "ready." in text_of(log), 60, "the worker to start")
        assert producer.enqueue("ops.steps", [1]).get(timeout=30) == 0
        time.sleep(1.5)  # the length of the idle time itself: five timeouts
        assert producer.enqueue("ops.steps", [2]).get(timeout=30) == 1  # its idle session replaced
    finally:
        producer.close()
        client.close()
        stop(worker)
    out = text_of(log)
    assert "lost the listener" not in out and "Traceback" not in out, out


def test_a_read_only_server_that_the_schema_needs_migrating_on_is_named_so(
    pg_url: str, pg_server_url: str, role: str
) -> None:
    """Was 'lost the pgtasks database ... while migrating', and a starting worker's 'is not
    reachable yet': the server answered, read-only."""
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
    url = with_user(pg_url, role)
    migrate = run_pgtasks("migrate", url=url)
    said = f"pgtasks: error: the pgtasks database {redact_url(url)} is read-only ("
    assert migrate.returncode == 2 and migrate.stderr.startswith(said), migrate.stderr
    assert f"and the schema '{_schema(pg_url)}' needs migrations: cannot execute" in migrate.stderr
    start = run_pgtasks("worker", "-A", APP, "--no-wait-for-database", url=url)
    assert start.returncode == 2 and "is read-only (" in start.stderr, start.stderr
    assert "lost" not in start.stderr, start.stderr


def test_a_roles_default_isolation_is_not_pgtasks_sessions(
    pg_url: str, pg_server_url: str, role: str
) -> None:
    """pgtasks' statements are written for READ COMMITTED; under a role's SERIALIZABLE default
    their waits ended in serialization failures, retried with a warning each time."""
    _migrated_with(pg_url, pg_server_url, role, "default_transaction_isolation = 'serializable'").close()
    url = with_schema(with_user(pg_server_url, role), _schema(pg_url))
    db = PostgresSystemDatabase(parse_database_url(url, "pgtasks"))
    try:
        with db._conn() as session:  # a pooled session, as every statement gets one
            row = session.execute("SELECT current_setting('transaction_isolation') AS i").fetchone()
    finally:
        db.close()
    assert row == {"i": "read committed"}
