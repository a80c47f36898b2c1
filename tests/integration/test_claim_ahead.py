"""The threads and asyncio pools claim ahead of their free slots by the recent task rate
(within Celery's worker_prefetch_multiplier): a backlog of short tasks goes in batches, slow
tasks a few at a time so that another worker gets its share, and tasks held at a warm
shutdown go back unstarted. Tasks of one claim share its claim token."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter

from pgtasks import App
from pgtasks.sysdb.records import ListTasksParams
from tests.support.inprocess import running_worker, wait_for


def rows(app: App) -> list[tuple[str, str | None, str | None, int, int | None]]:
    """(status, executor, claim token, attempts, start time) of every task."""
    listed = app.engine.database.sysdb.tasks_list(ListTasksParams(limit=1000))
    return [
        (t.status.value, t.executor_id, t.claim_token, t.recovery_attempts, t.started_at_epoch_ms)
        for t in listed
    ]


def test_short_tasks_are_claimed_ahead_and_held_ones_go_back_unstarted(pg_url: str) -> None:
    app = App("ahead", database_url=pg_url, lease_seconds=120)
    runs = itertools.count()
    blocking, release = threading.Event(), threading.Event()

    @app.task(name="ahead.brief")
    def brief() -> None:
        if next(runs) == 50:  # the 51st holds the only thread until the worker shuts down
            blocking.set()
            release.wait(30)

    brief.map_enqueue([()] * 300)
    with running_worker(app, concurrency=1, executor_id="w-short", prefetch_multiplier=100) as worker:
        wait_for(blocking.is_set, what="50 tasks run")
        wait_for(lambda: sum(r[0] == "PENDING" for r in rows(app)) > 1, what="tasks held behind it")
        threading.Thread(
            target=lambda: (wait_for(lambda: worker.ready() == "shutting down"), release.set())
        ).start()
    seen = rows(app)
    assert {r[0] for r in seen} == {"SUCCESS", "ENQUEUED"}  # nothing left PENDING
    per_claim = Counter(r[2] for r in seen if r[0] == "SUCCESS")
    assert max(per_claim.values()) > 1  # one thread, yet claims of several tasks
    back = [r for r in seen if r[0] == "ENQUEUED" and r[4] is not None]  # claimed, given back
    assert back and all(r[3] == 0 for r in back)  # unstarted: their claim's attempt taken back
    app.close()


def test_slow_tasks_are_claimed_a_few_at_a_time_so_another_worker_gets_work(pg_url: str) -> None:
    app = App("ahead", database_url=pg_url, lease_seconds=120)

    @app.task(name="ahead.slow")
    def slow() -> None:
        time.sleep(0.3)

    handles = [slow.delay() for _ in range(8)]
    with running_worker(app, concurrency=2, executor_id="w-first"):
        wait_for(lambda: sum(r[1] == "w-first" for r in rows(app)) == 2, what="w-first to start two")
        with running_worker(app, concurrency=2, executor_id="w-second"):
            for handle in handles:
                handle.get(timeout=60)
    seen = rows(app)
    assert {r[0] for r in seen} == {"SUCCESS"}
    by_worker = Counter(r[1] for r in seen)
    assert by_worker["w-second"] >= 2, by_worker  # a prefetch of 4 x 2 would have left it none
    app.close()
