"""Poison: tasks that kill or starve their process, and rows no worker can read.

Each must end in a terminal state that names the problem, after a bounded number of tries,
while the same worker goes on serving the other tasks.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from pathlib import Path

import pytest

from pgtasks import Client, MaxRecoveryAttemptsExceeded
from tests.faults.invariants import check, given_back, install_history, query, read_ledger, unfinished
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

APP = "tests.faults.apps.fault_app"
STEPS = 3


def serve_others(client: Client, count: int = 3) -> list[str]:
    """Send ordinary tasks and wait for them: the worker still serves."""
    handles = [client.enqueue("faults.steps", [STEPS]) for _ in range(count)]
    assert [h.get(timeout=60) for h in handles] == [sum(range(STEPS))] * count
    return [h.id for h in handles]


def test_a_task_that_kills_its_process_is_dead_lettered_while_others_complete(
    database_url: str, ledger: Path
) -> None:
    install_history(database_url)
    client = Client(database_url)
    # A Client has no task code: the limit the task declares must be sent along.
    poison = client.enqueue("faults.suicide", max_recovery_attempts=2)
    worker = worker_process(database_url, ledger, "w1", app=APP, pool="prefork", concurrency=2)
    try:
        others = serve_others(client)
        with pytest.raises(MaxRecoveryAttemptsExceeded, match="max_recovery_attempts=2"):
            poison.get(timeout=60)
        assert worker.poll() is None  # only its children died
        others += serve_others(client)
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    assert out.count(f"the process running task {poison.id} died") == 3
    record = client.engine.get_task(poison.id)
    assert record is not None and record.recovery_attempts == 3  # the first run and two more
    assert read_ledger(ledger).effects[(poison.id, 1)] == 3  # its step body, once per start
    report = check(database_url, [poison.id, *others], faulted_ids=given_back(database_url), ledger=ledger)
    assert report.statuses == {"SUCCESS": len(others), "MAX_RECOVERY_ATTEMPTS_EXCEEDED": 1}
    client.close()


def test_a_task_past_its_memory_limit_fails_with_memory_error(database_url: str, ledger: Path) -> None:
    install_history(database_url)
    client = Client(database_url)
    hog = client.enqueue("faults.hog", [512])
    worker = worker_process(database_url, ledger, "w1", app=APP, pool="prefork", concurrency=1)
    try:
        wait_for(lambda: not unfinished(database_url, [hog.id]), timeout=60, what="the hog to fail")
        others = serve_others(client)
        child = client.enqueue("faults.pid")
        assert child.get(timeout=60) != worker.pid  # run by a child process
        assert worker.poll() is None
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    record = client.engine.get_task(hog.id)
    assert record is not None and record.status.value == "ERROR" and record.recovery_attempts == 1
    assert json.loads(record.error or "{}")["type"] == "MemoryError"
    assert f"Task faults.hog[{hog.id}] raised unexpected" in out and "died" not in out  # the child lived on
    report = check(database_url, [hog.id, child.id, *others], ledger=ledger)
    assert report.statuses == {"ERROR": 1, "SUCCESS": len(others) + 1}
    client.close()


# name, inputs, serialization -> what the error must say
POISON_ROWS = {
    "undeserializable inputs": ("faults.steps", '{"args": [1,', "json", "cannot be deserialized as json"),
    "unknown serialization tag": ("faults.steps", "<args/>", "xml", "unknown serialization tag 'xml'"),
    "a tag the app does not accept": ("faults.steps", "gASVAAAA", "pickle", "does not accept"),
    "unknown task name": ("faults.no_such_task", '{"args": [], "kwargs": {}}', "json", "is not registered"),
    "inputs not an object": ("faults.steps", "[1, 2]", "json", "malformed"),
    "args not a list": ("faults.steps", '{"args": 3, "kwargs": {}}', "json", "malformed"),
}


def insert_raw(database_url: str, name: str, inputs: str, serialization: str) -> str:
    """A row written behind the engine's back, as a buggy or hostile producer would."""
    task_id = f"poison-{uuid.uuid4().hex[:12]}"
    now = int(time.time() * 1000)
    query(
        database_url,
        "INSERT INTO {t} (workflow_uuid, status, name, inputs, serialization, queue_name, created_at, "
        "updated_at) VALUES (?, 'ENQUEUED', ?, ?, ?, 'default', ?, ?)",
        (task_id, name, inputs, serialization, now, now),
    )
    return task_id


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_rows_no_worker_can_read_fail_with_their_reason(database_url: str, ledger: Path, pool: str) -> None:
    install_history(database_url)
    client = Client(database_url)
    poison = {insert_raw(database_url, *row[:3]): (case, row[3]) for case, row in POISON_ROWS.items()}
    worker = worker_process(database_url, ledger, "w1", app=APP, pool=pool, concurrency=2)
    try:
        wait_for(lambda: not unfinished(database_url, poison), timeout=60, what="the poison rows to end")
        others = serve_others(client)
        assert worker.poll() is None
    finally:
        out = stop(worker, signal.SIGTERM)
    assert worker.returncode == 0, out
    for task_id, (case, reason) in poison.items():
        record = client.engine.get_task(task_id)
        assert record is not None and record.status.value == "ERROR", case
        assert record.recovery_attempts == 1, case  # failed at once, not retried
        assert reason in json.loads(record.error or "{}")["message"], (case, record.error)
    report = check(database_url, [*poison, *others], ledger=ledger)
    assert report.statuses == {"ERROR": len(POISON_ROWS), "SUCCESS": len(others)}
    client.close()
