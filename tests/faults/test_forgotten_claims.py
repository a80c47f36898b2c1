"""A claim of a queue without limits commits without waiting for its WAL flush
(docs/guarantees.md). A crash of the server before the WAL reaches the kernel undoes it: the
task is ENQUEUED again with its attempt and its history row gone, although its first step
body ran. It runs again as after a worker crash, and the invariant check of the soak
recognises the run the database forgot (:func:`tests.faults.invariants.forgotten_claims`),
where it first failed in CI as "step 1 ran 2 times in 1 starts".

The server runs with ``wal_writer_delay=10s``, so that the WAL writer leaves the claim in
shared memory for seconds rather than 200 ms; no other commit flushes it, since the worker's
lease (30 s) puts its next heartbeat after the crash. The WAL writer may still write the
claim before the crash: each attempt then proves nothing and a fresh task tries again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks import Client
from tests.faults.invariants import (
    check,
    forgotten_claims,
    install_history,
    query,
    read_ledger,
    status_history,
    unfinished,
)
from tests.support.inprocess import wait_for
from tests.support.ledger import text_of
from tests.support.pgserver import PostgresServer
from tests.support.processes import stop, worker_process

APP = "tests.faults.apps.fault_app"
ATTEMPTS = 4


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    own = PostgresServer(settings=("wal_writer_delay=10s",)).start()
    try:
        yield own
    finally:
        own.destroy()


def test_a_crash_before_a_claims_flush_undoes_it_and_the_check_knows_that_run(
    server: PostgresServer, tmp_path: Path
) -> None:
    url = server.url + "?schema=forgotten"
    install_history(url)
    ledger = tmp_path / "effects.log"
    worker = worker_process(url, ledger, "w1", app=APP, lease_seconds=30, concurrency=1)
    client = Client(url)
    try:
        for attempt in range(ATTEMPTS):
            task_id = f"forgotten-{attempt}"
            client.enqueue("faults.steps", [2, 1.5], task_id=task_id)  # two steps of 1.5 s
            wait_for(lambda t=task_id: f"{t} effect 1 " in text_of(ledger), timeout=60, what="step 1")
            crashed = time.time()
            server.stop("immediate")
            server.launch()
            crash = (crashed, time.time())
            wait_for(lambda t=task_id: not unfinished(url, [t]), timeout=90, what="the task's end")
            seen = read_ledger(ledger)
            row = query(url, "SELECT recovery_attempts FROM {t} WHERE workflow_uuid = ?", (task_id,))
            attempts = row[0][0]
            if seen.effects[(task_id, 1)] == 1:  # the claim reached the kernel before the crash
                assert attempts == 1
                continue
            # The claim was undone: step 1 ran under a token no history row has, and again.
            history = status_history(url)
            first, second = seen.runs[(task_id, 1)]
            tokens = {c.claim_token for c in history if c.task_id == task_id and c.new == "PENDING"}
            assert first.token not in tokens and second.token in tokens
            assert attempts == 1  # the second claim's attempt only
            assert forgotten_claims(history, seen, [crash]) == [task_id]
            assert forgotten_claims(history, seen, [(crash[1] + 60, crash[1] + 61)]) == []  # not near a crash
            with pytest.raises(AssertionError, match=f"step 1 of {task_id} ran 2 times in 1 starts"):
                check(url, [task_id], ledger=ledger)  # what the soak reported before it knew
            forgotten = forgotten_claims(history, seen, [crash])
            report = check(url, [task_id], faulted_ids=forgotten, forgotten_ids=forgotten, ledger=ledger)
            assert report.statuses == {"SUCCESS": 1}
            break
        else:
            pytest.fail(f"the WAL writer wrote the claim before the crash in all {ATTEMPTS} attempts")
    finally:
        client.close()
        stop(worker)
