"""A queue's rate limit holds across workers, and while one of them is killed.

The limit is checked on the status history (every claim, with the time of the statement
that made it), by :func:`tests.faults.invariants.check`: no window of the period holds more
claims of the queue's tasks than the limit allows.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from pgtasks import Client
from tests.faults.apps.fault_app import METERED_QUEUE, METERED_RATE
from tests.faults.invariants import check, install_history, status_history, touched, unfinished
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

APP = "tests.faults.apps.fault_app"
TASKS = 16


def test_a_rate_limit_holds_across_workers_while_one_is_killed(pg_url: str, tmp_path: Path) -> None:
    url = pg_url
    install_history(url)
    ledger = tmp_path / "effects.log"
    client = Client(url)
    ids = [client.enqueue("faults.steps", [2], queue=METERED_QUEUE).id for _ in range(TASKS)]
    queues = ("-Q", METERED_QUEUE)
    workers = [
        worker_process(url, ledger, f"m{n}", app=APP, concurrency=4, extra_args=queues) for n in range(2)
    ]
    try:
        most, _period = METERED_RATE
        wait_for(lambda: len(ids) - len(unfinished(url, ids)) >= most, timeout=60, what="the first tasks")
        killed_at = time.time()
        workers[0].kill()
        assert workers[0].wait(timeout=30) == -signal.SIGKILL
        wait_for(lambda: not unfinished(url, ids), timeout=120, what="every task to finish")
    finally:
        stop(workers[1])
    history = status_history(url)
    faulted = touched(history, killed_at, killed_at, "m0")
    report = check(url, ids, faulted_ids=faulted, ledger=ledger, rate_limits={METERED_QUEUE: METERED_RATE})
    assert report.peaks[f"{METERED_QUEUE} per 1s"][0] == most  # the limit was reached, never passed
    client.close()
