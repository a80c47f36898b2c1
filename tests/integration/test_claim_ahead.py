"""The threads and asyncio pools claim ahead of their free slots by the recent task rate
(within Celery's worker_prefetch_multiplier): a backlog of short tasks goes in batches, slow
tasks a few at a time so that another worker gets its share, and tasks held at a warm
shutdown go back unstarted. Tasks of one claim share its claim token. Where the window is
large, a second claim stream keeps a second claim in flight (OVERLAP_BATCH lowered here so
that a small backlog uses it)."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter

import pytest

from pgtasks import App
from pgtasks.sysdb.records import ListTasksParams, TaskRecord
from pgtasks.worker import worker as worker_module
from pgtasks.worker.worker import OVERLAP_BATCH, Worker
from tests.support.inprocess import running_worker, wait_for


def rows(app: App) -> list[tuple[str, str | None, str | None, int, int | None]]:
    """(status, executor, claim token, attempts, start time) of every task."""
    listed = app.engine.database.sysdb.tasks_list(ListTasksParams(limit=1000))
    return [
        (t.status.value, t.executor_id, t.claim_token, t.recovery_attempts, t.started_at_epoch_ms)
        for t in listed
    ]


@pytest.mark.parametrize("overlap_batch", [OVERLAP_BATCH, 2], ids=["one-stream", "two-streams"])
def test_short_tasks_are_claimed_ahead_and_held_ones_go_back_unstarted(
    pg_url: str, overlap_batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "OVERLAP_BATCH", overlap_batch)
    app = App("ahead", database_url=pg_url, lease_seconds=120)
    runs = itertools.count()
    blocking, release = threading.Event(), threading.Event()

    @app.task(name="ahead.brief")
    def brief() -> None:
        if next(runs) == 50:  # the 51st holds the only thread until the worker shuts down
            blocking.set()
            release.wait(30)
        # The task's work: 50 of them outlast the task rate's first round (RATE_WINDOW), on
        # which the claims ahead are sized; 50 no-op tasks on a fast machine did not.
        time.sleep(0.003)

    brief.map_enqueue([()] * 300)
    with running_worker(app, concurrency=1, executor_id="w-short", prefetch_multiplier=100) as worker:
        wait_for(blocking.is_set, what="50 tasks run")
        wait_for(lambda: sum(r[0] == "PENDING" for r in rows(app)) > 1, what="tasks held behind it")
        # Released once the warm shutdown gave the held tasks back: sooner, the freed thread
        # could start them between the stop and the give-back.
        threading.Thread(
            target=lambda: (
                wait_for(lambda: worker.ready() == "shutting down" and worker._pool.waiting() == 0),
                release.set(),
            )
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


def test_two_claim_streams_stay_within_the_window_and_run_each_task_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "OVERLAP_BATCH", 2)
    claimers: Counter[str] = Counter()
    claim_into_pool = Worker._claim_into_pool
    most_in_hand = 0

    def observed(self: Worker, free: int, unlimited_only: bool = False) -> list[TaskRecord]:
        nonlocal most_in_hand
        claimed = claim_into_pool(self, free, unlimited_only)
        claimers[threading.current_thread().name] += len(claimed)
        # read by the claiming thread itself: a sampler on a loaded machine may see none in hand
        most_in_hand = max(most_in_hand, self._in_hand())
        return claimed

    monkeypatch.setattr(Worker, "_claim_into_pool", observed)
    app = App("overlap", database_url=pg_url, lease_seconds=120)
    ran: Counter[int] = Counter()
    lock = threading.Lock()

    @app.task(name="overlap.brief")
    def brief(i: int) -> None:
        with lock:
            ran[i] += 1

    brief.map_enqueue([(i,) for i in range(600)])
    with running_worker(app, concurrency=4, executor_id="w-overlap", prefetch_multiplier=8) as worker:

        def drained() -> bool:
            nonlocal most_in_hand
            most_in_hand = max(most_in_hand, worker._in_hand())
            return sum(ran.values()) == 600

        wait_for(drained, what="600 tasks run")
    seen = rows(app)
    assert {r[0] for r in seen} == {"SUCCESS"}
    assert {r[3] for r in seen} == {1}  # each claimed once
    assert set(ran.values()) == {1} and len(ran) == 600  # each run once
    assert 0 < most_in_hand <= 4 * 8  # never more than concurrency x prefetch multiplier in hand
    assert claimers["pgtasks-claim-2"] > 0 and claimers["run-w-overlap"] > 0, claimers  # both claimed
    app.close()


def test_every_thread_runs_a_slow_task_at_once_even_after_a_backlog_of_short_ones(pg_url: str) -> None:
    """The threads pool wakes only the threads short tasks need (pools.HANDOFF_SECONDS): here a
    backlog of short tasks teaches it that tasks are short, then 32 slow ones (each waits for
    all 32 to run at once) must still get a thread each: the first batch, when the task time is
    not known yet, and the batch after the short ones, which the woken threads' estimate alone
    would leave to a few threads."""
    app = App("spread", database_url=pg_url, lease_seconds=120)
    meeting = threading.Barrier(32, timeout=30)  # broken (the task fails) unless all 32 run at once

    @app.task(name="spread.short")
    def short() -> None:
        pass

    @app.task(name="spread.together")
    def together() -> None:
        meeting.wait()

    with running_worker(app, concurrency=32, executor_id="w-spread"):
        for handle in together.map_enqueue([()] * 32):  # the task time is not known yet
            handle.get(timeout=60)
        meeting.reset()
        short.map_enqueue([()] * 200)
        wait_for(lambda: sum(r[0] == "SUCCESS" for r in rows(app)) == 232, what="200 short tasks run")
        for handle in together.map_enqueue([()] * 32):
            handle.get(timeout=60)
    assert {r[0] for r in rows(app)} == {"SUCCESS"}
    app.close()


@pytest.mark.parametrize("multiplier", [None, 4], ids=["default", "given"])
def test_short_tasks_are_held_beyond_the_default_multiplier_but_within_one_given(
    pg_url: str, multiplier: int | None
) -> None:
    """Without a multiplier a worker holds what it finishes in AHEAD_SECONDS while its tasks run
    short, beyond concurrency x 4 (a window of 4 per thread left a small pool idle between
    claims); a multiplier given stays the bound, as Celery's."""
    app = App("window", database_url=pg_url, lease_seconds=120)
    ran: list[int] = []  # list.append is atomic
    running: list[Worker] = []

    @app.task(name="window.brief")
    def brief() -> None:
        # Read by each task: a poll from the test's thread could miss a fast drain's peaks.
        ran.append(running[0]._in_hand() if running else 0)

    brief.map_enqueue([()] * 3000)
    with running_worker(app, concurrency=2, executor_id="w-window", prefetch_multiplier=multiplier) as worker:
        running.append(worker)
        wait_for(lambda: len(ran) >= 3000, timeout=120, what="3,000 short tasks run")
    most_in_hand = max(ran)
    seen = app.engine.database.sysdb.tasks_list(ListTasksParams(limit=5000))
    assert len(seen) == 3000 and {(t.status.value, t.recovery_attempts) for t in seen} == {("SUCCESS", 1)}
    if multiplier is None:
        assert most_in_hand > 2 * 4
    else:
        assert 0 < most_in_hand <= 2 * 4
    app.close()


def test_tasks_held_beyond_four_per_thread_go_back_when_slow_and_another_worker_runs_them(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue of short tasks followed by slow ones: the claims sized by the short ones take
    the slow ones too. Those held beyond Celery's bound (4 per thread) go back unstarted once
    they waited GIVE_BACK_SECONDS (the last claimed; their attempt taken back), and a second
    worker runs them; each runs once. AHEAD_SECONDS is raised so that, however loaded the
    machine, worker A's claims take every slow task."""
    monkeypatch.setattr(worker_module, "AHEAD_SECONDS", 10.0)
    app = App("giveback", database_url=pg_url, lease_seconds=120)
    go = threading.Event()
    ran: Counter[int] = Counter()
    lock = threading.Lock()

    @app.task(name="giveback.brief")
    def brief() -> None:
        pass

    @app.task(name="giveback.slow")
    def slow(i: int) -> None:
        with lock:
            ran[i] += 1
        go.wait(30)

    brief.map_enqueue([()] * 2000)
    slow.map_enqueue([(i,) for i in range(30)])

    def slow_rows() -> list[TaskRecord]:
        listed = app.engine.database.sysdb.tasks_list(ListTasksParams(name="giveback.slow", limit=100))
        return sorted(listed, key=lambda t: t.enqueue_seq)

    with running_worker(app, concurrency=2, executor_id="w-a"):
        # A runs the 2,000 short tasks first: on a loaded machine that alone took over 20 s.
        wait_for(lambda: _held_by(slow_rows(), "w-a") == 2 * 4, timeout=90, what="A to keep 8")
        back = [t for t in slow_rows() if t.executor_id is None]
        # All 30 were claimed by A; the last 22 went back unstarted, their attempt taken back.
        assert len(back) == 22 and all(t.status.value == "ENQUEUED" for t in back)
        assert all(t.started_at_epoch_ms is not None and t.recovery_attempts == 0 for t in back)
        assert [t.executor_id for t in slow_rows()[:8]] == ["w-a"] * 8  # A keeps the first ones
        with running_worker(app, concurrency=2, executor_id="w-b"):
            # At least its two threads' worth: more (Celery's 4 per thread) where a loaded
            # machine made A give back short tasks too, which B ran first (short: it claims ahead).
            wait_for(lambda: sum(t.executor_id == "w-b" for t in slow_rows()) >= 2, what="B to take 2")
            go.set()
            wait_for(lambda: all(t.status.value == "SUCCESS" for t in slow_rows()), what="every slow task")
    seen = slow_rows()
    assert {t.recovery_attempts for t in seen} == {1}  # each claim given back is not counted
    assert ran == Counter(range(30))  # each ran exactly once
    assert sum(t.executor_id == "w-b" for t in seen) >= 2
    app.close()


def _held_by(rows: list[TaskRecord], executor_id: str) -> int:
    return sum(t.executor_id == executor_id for t in rows)
