"""Delayed tasks start when due, not at the next heartbeat round (issue 17, item 5).

Each worker here has a lease of 240 s (a heartbeat round, which used to be the only
promotion of due DELAYED tasks, every 60 s) and a poll of 60 s, so neither can explain a
start within the bounds below: only the worker's due-time timer, armed by the enqueue's
NOTIFY or by its own retry, and the announcement of a freed slot can. The bounds are
generous against a loaded machine and far below those 60 s; the precision itself is
measured by ``bench/delay_precision.py``.
"""

from __future__ import annotations

import itertools
import threading
import time

import pgtasks
from pgtasks import App
from tests.support.inprocess import running_worker, wait_for

BOUND = 20.0  # seconds: a heartbeat round or a poll would take 60


def slow_app(pg_url: str) -> App:
    return App("due", database_url=pg_url, poll_interval=60, lease_seconds=240)


def test_a_countdown_task_starts_when_due_not_at_a_heartbeat_round(pg_url: str) -> None:
    app = slow_app(pg_url)
    started: list[float] = []

    @app.task
    def stamp() -> None:
        started.append(time.time())

    with running_worker(app) as worker:
        wait_for(
            lambda: worker.listening and worker._wakeups is not None and worker._wakeups.listening.is_set()
        )
        sent = time.time()
        handle = stamp.apply_async(countdown=1)
        handle.get(timeout=BOUND)
        assert started and 0.9 <= started[0] - sent < BOUND
        assert handle.status == "SUCCESS"
    app.close()


def test_retries_with_a_countdown_run_when_due(pg_url: str) -> None:
    app = slow_app(pg_url)
    runs: list[float] = []

    @app.task
    def flaky() -> int:
        runs.append(time.time())
        if len(runs) < 3:
            raise pgtasks.RetryRequested(countdown=1, reason=ConnectionError("not yet"))
        return len(runs)

    with running_worker(app) as worker:
        wait_for(lambda: worker._wakeups is not None and worker._wakeups.listening.is_set())
        assert flaky.delay().get(timeout=2 * BOUND) == 3
        gaps = [b - a for a, b in itertools.pairwise(runs)]
        assert all(0.9 <= gap < BOUND for gap in gaps), gaps
    app.close()


def test_a_slot_freed_under_a_global_limit_is_refilled_at_once(pg_url: str) -> None:
    app = slow_app(pg_url)
    app.queue("one", concurrency=1)
    release = threading.Event()

    @app.task(queue="one")
    def hold(i: int) -> int:
        release.wait(30)
        return i

    with running_worker(app, queues=("one",), concurrency=4) as worker:
        wait_for(lambda: worker._wakeups is not None and worker._wakeups.listening.is_set())
        handles = [hold.delay(i) for i in range(3)]
        wait_for(lambda: worker.running() == 1, what="the first task to start")
        release.set()
        # Each completion frees the queue's only slot: the next task must be claimed on
        # that news, not at the next poll (60 s), three times in a row.
        assert [h.get(timeout=BOUND) for h in handles] == [0, 1, 2]
    app.close()


def test_a_freed_slot_under_a_global_limit_is_announced_to_other_workers(pg_url: str) -> None:
    app = slow_app(pg_url)
    app.queue("one", concurrency=1)
    release = threading.Event()

    @app.task(queue="one")
    def hold() -> int:
        release.wait(30)
        return 1

    listener = app.engine.worker_api.open_listener()
    assert listener is not None
    try:
        with running_worker(app, queues=("one",)) as worker:
            wait_for(lambda: worker._wakeups is not None and worker._wakeups.listening.is_set())
            handle = hold.delay()
            heard: set[str] = set()
            while "one" not in heard:  # the enqueue's own NOTIFY, the only one so far
                heard |= listener.wait(timeout=BOUND)
            wait_for(lambda: worker.running() == 1, what="the task to start")
            release.set()
            assert handle.get(timeout=BOUND) == 1
            # Once the outcome commits, the completing worker announces the freed slot.
            assert "one" in listener.wait(timeout=BOUND)
    finally:
        listener.close()
    app.close()
