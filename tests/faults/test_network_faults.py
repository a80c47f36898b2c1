"""Network faults between real worker processes and PostgreSQL, and stalled workers.

The workers under test reach the database through :class:`tests.faults.proxy.PgProxy`, which
cuts connections right after a commit (the ambiguous commit: committed, but the client only
sees a lost connection), blackholes them, or resets them; or their sessions are terminated by
the server; or a worker is frozen with SIGSTOP (a zombie). Rescuing workers, and the tests'
own reads, go to the database directly. Leases are 1 s, so takeovers are quick.

What must hold afterwards, read from the database and from the effects ledger the step
bodies write (:mod:`tests.faults.invariants`): every task ends exactly once, its checkpoints
are 1..n with no extra row, a step body runs once (twice at most for the step a fault
interrupted, and only when the task changed hands), and a worker that lost its task writes
nothing more for it.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgtasks import Client
from pgtasks.sysdb.urls import parse_database_url
from tests.faults.invariants import check, given_back, install_history, query, read_ledger, unfinished
from tests.faults.proxy import PgProxy
from tests.support.inprocess import wait_for
from tests.support.ledger import text_of
from tests.support.processes import effects, stop, worker_process
from tests.support.requests import enqueue_request

APP = "tests.faults.apps.fault_app"  # faults.steps(n, seconds): n steps that record effects
DURABLE_APP = "tests.acceptance.apps.durable_app"  # durable.slow, durable.sleepy
CHECKPOINT_INSERT = r"INSERT INTO \S*operation_outputs"
TASK_INSERT = r"INSERT INTO \S*workflow_status"
OUTCOME_UPDATE = r"workflow_uuid = o\.id"  # the fenced UPDATE of tasks_complete
ABANDONED = "abandoned: cancelled or taken over by another worker"
NOT_WRITTEN = "outcomes were not written"


@pytest.fixture
def proxy(pg_url: str) -> Iterator[PgProxy]:
    """A proxy in front of the test database; the schema is migrated and has the status
    history trigger before any worker starts."""
    install_history(pg_url)
    with PgProxy(pg_url) as running:
        yield running


class Workers:
    """Worker subprocesses of one test, each logging to its own file; all are stopped (and
    SIGCONT-ed first, should a test end with one stopped) when the test ends."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.ledger = tmp_path / "effects.log"
        self.processes: dict[str, subprocess.Popen[str]] = {}

    def start(self, url: str, name: str, app: str = APP, **options: Any) -> subprocess.Popen[str]:
        process = worker_process(url, self.ledger, name, app=app, output=self.log(name), **options)
        self.processes[name] = process
        return process

    def log(self, name: str) -> Path:
        return self.tmp_path / f"{name}.log"

    def output(self, name: str) -> str:
        return text_of(self.log(name))

    def wait_output(self, name: str, text: str, count: int = 1, timeout: float = 30) -> None:
        wait_for(lambda: self.output(name).count(text) >= count, timeout, f"{count}x {text!r} from {name}")

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.processes.values())

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
        for process in self.processes.values():
            try:
                stop(process, timeout=30)
            except subprocess.TimeoutExpired:  # stuck: the test has failed already
                stop(process, signal.SIGKILL)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    started = Workers(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


# -- reading the database directly -------------------------------------------------------------


def task_row(url: str, task_id: str) -> dict[str, Any]:
    """The task's row as it is now (status, owner, claim, attempts, output, last update)."""
    columns = ("status", "executor_id", "claim_token", "recovery_attempts", "output", "updated_at")
    [row] = query(url, f"SELECT {', '.join(columns)} FROM {{t}} WHERE workflow_uuid = ?", (task_id,))
    return dict(zip(columns, row, strict=True))


def step_rows(url: str, task_id: str) -> list[tuple[int, str, str]]:
    """(function_id, executor_id, claim_token) of each checkpoint of the task."""
    sql = "SELECT function_id, executor_id, claim_token FROM {o} WHERE workflow_uuid = ? ORDER BY function_id"
    return [(r[0], r[1], r[2]) for r in query(url, sql, (task_id,))]


def status_of(url: str, task_id: str) -> str:
    return str(task_row(url, task_id)["status"])


def step_effects(ledger: Path, task_id: str, steps: int) -> list[int]:
    """How many times each step body (function ids 1..steps) of the task ran."""
    seen = read_ledger(ledger).effects
    return [seen[(task_id, function_id)] for function_id in range(1, steps + 1)]


def enqueue(url: str, count: int, steps: int, seconds: float) -> list[str]:
    client = Client(url)
    try:
        return [client.enqueue("faults.steps", [steps, seconds]).id for _ in range(count)]
    finally:
        client.close()


def wait_finished(url: str, ids: list[str], timeout: float = 30) -> None:
    wait_for(lambda: not unfinished(url, ids), timeout, f"{len(ids)} tasks to finish")


# -- ambiguous commits ---------------------------------------------------------------------------


def test_a_checkpoint_whose_commit_reply_is_lost_is_recognised_as_its_own(
    pg_url: str, proxy: PgProxy, workers: Workers
) -> None:
    """Step 2's checkpoint commits, the reply is lost; the retry finds its own row: the step
    does not run again, no conflict, the task goes on and completes on the same claim."""
    workers.start(proxy.url, "w1")
    proxy.cut_after_commit(CHECKPOINT_INSERT, skip=1)  # step 1 passes, step 2 is cut
    [task_id] = enqueue(pg_url, 1, steps=3, seconds=0.05)
    wait_finished(pg_url, [task_id])
    assert [(c.committed, "operation_outputs" in c.statement) for c in proxy.cuts] == [(True, True)]
    row = task_row(pg_url, task_id)
    assert row["status"] == "SUCCESS" and row["executor_id"] == "w1" and row["recovery_attempts"] == 1
    assert step_rows(pg_url, task_id) == [(i, "w1", row["claim_token"]) for i in (1, 2, 3)]
    assert step_effects(workers.ledger, task_id, 3) == [1, 1, 1]
    assert ABANDONED not in workers.output("w1") and "released" not in workers.output("w1")
    assert given_back(pg_url) == []
    check(pg_url, [task_id], ledger=workers.ledger)


def test_an_enqueue_whose_commit_reply_is_lost_is_found_by_the_retry(
    pg_url: str, proxy: PgProxy, workers: Workers
) -> None:
    """A client's INSERT commits but the client sees a lost connection; sending again with
    the same task id returns the task that exists, for one task and for a batch, and each
    task runs once. A single enqueue (one statement, its id fixed before the insert) is
    sent again by pgtasks itself (issue 17): the caller sees no error."""
    client = Client(proxy.url)
    single = f"net-{uuid.uuid4()}"
    batch = [enqueue_request("faults.steps", args=(2, 0.0), task_id=f"net-{uuid.uuid4()}") for _ in range(3)]
    try:
        proxy.cut_after_commit(TASK_INSERT)
        assert client.enqueue("faults.steps", [2, 0.0], task_id=single).id == single  # retried
        assert query(pg_url, "SELECT count(*) FROM {t}") == [(1,)]  # committed once
        assert client.enqueue("faults.steps", [2, 0.0], task_id=single).id == single
        proxy.cut_after_commit(TASK_INSERT)
        assert client.engine.enqueue(batch) == [r.options.task_id for r in batch]  # retried
        assert client.engine.enqueue(batch) == [r.options.task_id for r in batch]
    finally:
        client.close()
    assert [c.committed for c in proxy.cuts] == [True, True]
    ids = [single, *(r.options.task_id for r in batch)]
    assert sorted(r[0] for r in query(pg_url, "SELECT workflow_uuid FROM {t}")) == sorted(ids)
    workers.start(pg_url, "w1")
    wait_finished(pg_url, ids)
    assert all(step_effects(workers.ledger, task_id, 2) == [1, 1] for task_id in ids)
    check(pg_url, ids, ledger=workers.ledger)


def test_an_outcome_whose_commit_reply_is_lost_is_written_once(
    pg_url: str, proxy: PgProxy, workers: Workers
) -> None:
    """The batched outcome UPDATE commits, its reply is lost; the completer's retry finds
    the task finished: one terminal state, nothing re-run, the worker goes on."""
    worker = workers.start(proxy.url, "w1")
    proxy.cut_after_commit(OUTCOME_UPDATE)
    [first] = enqueue(pg_url, 1, steps=2, seconds=0.0)
    wait_finished(pg_url, [first])
    wait_for(lambda: bool(proxy.cuts), what="the outcome's commit to be cut")
    assert [c.committed for c in proxy.cuts] == [True]
    [second] = enqueue(pg_url, 1, steps=2, seconds=0.0)  # the worker still serves
    wait_finished(pg_url, [second])
    assert worker.poll() is None
    for task_id in (first, second):
        row = task_row(pg_url, task_id)
        assert row["status"] == "SUCCESS" and row["executor_id"] == "w1" and row["recovery_attempts"] == 1
        assert row["output"] == "1"
        assert [s[0] for s in step_rows(pg_url, task_id)] == [1, 2]
        assert step_effects(workers.ledger, task_id, 2) == [1, 1]
    assert given_back(pg_url) == []
    check(pg_url, [first, second], ledger=workers.ledger)  # one terminal transition each
    assert NOT_WRITTEN not in workers.output("w1")  # the retry recognised its own write


# -- blackholes ---------------------------------------------------------------------------------


def heartbeat_age(url: str, executor_id: str) -> int | None:
    """Milliseconds since the executor's last heartbeat (database clock), None without a row."""
    target = parse_database_url(url)
    now = "(extract(epoch FROM now()) * 1000)::bigint"
    sql = f'SELECT {now} - last_heartbeat FROM "{target.schema}".executors WHERE executor_id = %s'
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        found = conn.execute(sql, [executor_id]).fetchone()
    return int(found[0]) if found else None


def test_a_blackhole_shorter_than_the_lease_changes_nothing(
    pg_url: str, proxy: PgProxy, workers: Workers
) -> None:
    """The worker's connections hang for 0.8 s of its 2 s lease in the middle of a task; a
    second worker is watching for expired leases. No takeover: the task completes on its first
    claim, every step once."""
    workers.start(proxy.url, "w1", lease_seconds=2)
    workers.start(pg_url, "w2", lease_seconds=2, extra_args=("-Q", "other"))  # a rescuer only
    [task_id] = enqueue(pg_url, 1, steps=4, seconds=0.3)
    wait_for(lambda: step_effects(workers.ledger, task_id, 4)[1] == 1, what="step 2 to start")
    proxy.blackhole()
    time.sleep(0.8)  # the fault's duration, not a synchronisation
    silent = heartbeat_age(pg_url, "w1")
    proxy.pass_()
    wait_finished(pg_url, [task_id])
    assert silent is not None and 750 <= silent < 2000  # no heartbeat got through; the lease held
    row = task_row(pg_url, task_id)
    assert row["status"] == "SUCCESS" and row["executor_id"] == "w1" and row["recovery_attempts"] == 1
    assert step_rows(pg_url, task_id) == [(i, "w1", row["claim_token"]) for i in (1, 2, 3, 4)]
    assert step_effects(workers.ledger, task_id, 4) == [1, 1, 1, 1]
    assert given_back(pg_url) == []
    assert "recovered" not in workers.output("w2")
    check(pg_url, [task_id], ledger=workers.ledger)


def test_a_blackhole_longer_than_the_lease_hands_the_task_over_and_fences_the_old_owner(
    pg_url: str, proxy: PgProxy, workers: Workers
) -> None:
    """The worker is cut off during step 2 for longer than its lease. A worker connected
    directly takes the task over and finishes it. When the network heals, the old worker's
    held checkpoint reaches the server and is refused: it abandons the task, and the step rows
    and the outcome stay the new owner's."""
    workers.start(proxy.url, "w1")
    [task_id] = enqueue(pg_url, 1, steps=5, seconds=0.4)
    wait_for(lambda: step_effects(workers.ledger, task_id, 5)[0] == 1, what="step 1 to start")
    workers.start(pg_url, "w2")  # idle: the only task is w1's
    wait_for(lambda: step_effects(workers.ledger, task_id, 5)[1] == 1, what="step 2 to start")
    proxy.blackhole()
    wait_finished(pg_url, [task_id], timeout=30)
    row = task_row(pg_url, task_id)
    steps = step_rows(pg_url, task_id)
    assert row["status"] == "SUCCESS" and row["executor_id"] == "w2" and row["recovery_attempts"] == 2
    assert [s[:2] for s in steps] == [(1, "w1"), (2, "w2"), (3, "w2"), (4, "w2"), (5, "w2")]
    assert {s[2] for s in steps[1:]} == {row["claim_token"]}
    proxy.pass_()
    workers.wait_output("w1", ABANDONED)  # its late checkpoint of step 2 was refused
    assert task_row(pg_url, task_id) == row
    assert step_rows(pg_url, task_id) == steps
    assert step_effects(workers.ledger, task_id, 5) == [1, 2, 1, 1, 1]  # w1 never ran step 3
    assert workers.alive()
    check(pg_url, [task_id], faulted_ids=[task_id], ledger=workers.ledger)


def test_a_slow_network_changes_nothing(pg_url: str, proxy: PgProxy, workers: Workers) -> None:
    """Every message between the worker and the server is 10 ms late, both ways: tasks
    complete on their first claim, each step once, and the rescuer watching for expired leases
    finds nothing to recover.

    It used to take not much more: while the heartbeat shared its thread with maintenance
    (recovery, promotion, queue settings, stray claims, expiry: about nine sequential round
    trips before the quarter-lease wait), 50 ms each way put the worker's own heartbeats
    1.17 s apart (measured) and its 1 s lease lapsed while it was healthy. The heartbeat now
    has a thread of its own."""
    proxy.delay(0.01)
    with psycopg.connect(parse_database_url(proxy.url).dsn, autocommit=True) as conn:
        began = time.monotonic()
        conn.execute("SELECT 1").fetchone()
        assert time.monotonic() - began >= 0.02  # the delay is in force
    workers.start(proxy.url, "w1")
    workers.start(pg_url, "w2", extra_args=("-Q", "other"))  # a rescuer only
    ids = enqueue(pg_url, 3, steps=2, seconds=0.0)
    wait_finished(pg_url, ids)
    for task_id in ids:
        row = task_row(pg_url, task_id)
        assert row["executor_id"] == "w1" and row["recovery_attempts"] == 1
        assert step_effects(workers.ledger, task_id, 2) == [1, 1]
    assert given_back(pg_url) == []
    check(pg_url, ids, ledger=workers.ledger)


# -- lost sessions -------------------------------------------------------------------------------


def terminate_sessions(url: str, ports: list[int]) -> int:
    """pg_terminate_backend every session whose client port is one of ``ports``."""
    sql = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE client_port = ANY(%s)"
    with psycopg.connect(parse_database_url(url).dsn, autocommit=True) as conn:
        found = conn.execute(sql, [ports]).fetchone()
    return int(found[0]) if found else 0


@pytest.mark.parametrize("fault", ["reset", "terminate"])
def test_workers_reconnect_after_their_connections_are_lost_mid_run(
    pg_url: str, proxy: PgProxy, workers: Workers, fault: str
) -> None:
    """Three times while tasks run, every connection of both workers is reset by the network
    (TCP RST) or terminated by the server (pg_terminate_backend). The workers reconnect
    without a restart, and every task, including those sent after the faults, completes."""
    for name in ("w1", "w2"):
        workers.start(proxy.url, name)
    for name in ("w1", "w2"):
        workers.wait_output(name, f"{name} ready.")
    ids = enqueue(pg_url, 8, steps=3, seconds=0.15)
    for _ in range(3):
        progress = sum(read_ledger(workers.ledger).effects.values())
        wait_for(
            lambda p=progress: sum(read_ledger(workers.ledger).effects.values()) >= p + 4, what="progress"
        )
        accepted = proxy.accepted
        if fault == "reset":
            assert proxy.reset() > 0
        else:
            assert terminate_sessions(pg_url, proxy.backend_ports()) > 0
        wait_for(lambda a=accepted: proxy.accepted > a, what="a worker to reconnect")
    later = enqueue(pg_url, 2, steps=3, seconds=0.0)
    wait_finished(pg_url, ids + later, timeout=60)
    assert workers.alive()
    assert all("lost the listener connection" in workers.output(name) for name in ("w1", "w2"))
    for task_id in ids + later:
        assert status_of(pg_url, task_id) == "SUCCESS"
        assert [s[0] for s in step_rows(pg_url, task_id)] == [1, 2, 3]
    # A step body runs again only in a task that was given back (none, unless a claim's own
    # commit reply was lost): a lost connection mid-step retries the write, not the body.
    check(pg_url, ids + later, faulted_ids=given_back(pg_url), ledger=workers.ledger)


# -- a zombie worker -----------------------------------------------------------------------------


def test_a_stopped_worker_that_wakes_up_after_a_takeover_writes_nothing(
    pg_url: str, workers: Workers
) -> None:
    """SIGSTOP a worker for more than twice its lease while it runs a task of steps and a
    task sleeping in its body; another worker takes both over and finishes them. After
    SIGCONT, the zombie's late checkpoint and late outcome are refused by the fence."""
    install_history(pg_url)
    zombie = workers.start(pg_url, "w1", app=DURABLE_APP)
    client = Client(pg_url)
    try:
        stepped = client.enqueue("durable.slow", [8]).id  # 8 steps of 0.2 s
        sleeper = client.enqueue("durable.sleepy", [1.5]).id
    finally:
        client.close()
    wait_for(lambda: effects(workers.ledger)[(stepped, "slow1")] == 1, what="step 2 to start")
    assert task_row(pg_url, sleeper)["executor_id"] == "w1"
    zombie.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    workers.start(pg_url, "w2", app=DURABLE_APP)
    wait_finished(pg_url, [stepped, sleeper])
    wait_for(lambda: time.monotonic() - stopped_at > 2.0, what="twice the lease")
    rows = {t: task_row(pg_url, t) for t in (stepped, sleeper)}
    steps = step_rows(pg_url, stepped)
    assert all(r["status"] == "SUCCESS" and r["executor_id"] == "w2" for r in rows.values())
    zombie.send_signal(signal.SIGCONT)
    # Its late checkpoint (or, stopped between steps, its ownership check) is refused.
    workers.wait_output("w1", f"durable.slow[{stepped}] {ABANDONED}")
    workers.wait_output("w1", NOT_WRITTEN)  # the sleeper's late outcome was refused
    assert {t: task_row(pg_url, t) for t in (stepped, sleeper)} == rows
    assert step_rows(pg_url, stepped) == steps
    assert [s[0] for s in steps] == list(range(1, 9))
    seen = effects(workers.ledger)
    runs = [seen[(stepped, f"slow{i}")] for i in range(8)]
    assert max(runs) <= 2 and runs.count(2) <= 1, runs  # only the interrupted step may run twice
    assert zombie.poll() is None
    check(pg_url, [stepped, sleeper])


# -- a partition inside a transaction (last: it fails today, see its docstring) -------------


def test_a_partition_inside_a_checkpoint_transaction_still_lets_another_worker_take_over(
    pg_url: str, proxy: PgProxy, workers: Workers
) -> None:
    """The worker is cut off after step 2's checkpoint INSERT reached the server and before
    its COMMIT did: the server keeps that transaction open, the task row locked FOR SHARE by
    the insert's fence. The lease promises that another worker takes the task over after the
    lease, whatever the cut-off worker's connections hold; when the network heals, the old
    worker's COMMIT must change nothing either.

    This used to hang: w2's recovery UPDATE waited for that row lock for as long as the
    partition lasted (and, on w2's lease thread, stopped w2's own heartbeats). Now the server
    ends a session idle in a transaction for 5 s (idle_in_transaction_session_timeout), and
    recovery skips rows another session holds (SKIP LOCKED) until then. w1, when its COMMIT
    fails, has been stuck longer than its lease: it releases the task, and that late release is
    fenced like any other write."""
    workers.start(proxy.url, "w1")
    proxy.blackhole_before_commit(CHECKPOINT_INSERT, skip=1)
    [task_id] = enqueue(pg_url, 1, steps=3, seconds=0.2)
    wait_for(lambda: step_effects(workers.ledger, task_id, 3)[0] == 1, what="step 1 to start")
    workers.start(pg_url, "w2")  # idle: the only task is w1's
    try:
        wait_for(lambda: bool(proxy.held), what="step 2's COMMIT to be held")
        wait_for(
            lambda: task_row(pg_url, task_id)["executor_id"] == "w2",
            timeout=8,  # the lease is 1 s
            what="w2 to take over the task of w1, partitioned inside a transaction",
        )
        wait_finished(pg_url, [task_id])
    finally:
        proxy.pass_()
    gave_up = (ABANDONED, f"Task faults.steps[{task_id}] released")
    wait_for(lambda: any(text in workers.output("w1") for text in gave_up), 30, "w1 to give the task up")
    row = task_row(pg_url, task_id)
    assert row["status"] == "SUCCESS" and row["executor_id"] == "w2"
    assert [s[:2] for s in step_rows(pg_url, task_id)] == [(1, "w1"), (2, "w2"), (3, "w2")]
    assert step_effects(workers.ledger, task_id, 3) == [1, 2, 1]
    check(pg_url, [task_id], faulted_ids=[task_id], ledger=workers.ledger)
