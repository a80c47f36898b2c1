"""SIGKILL at every crash point of the engine, with both pools, then the invariant check.

Each case enqueues a few three-step tasks, starts a worker armed with one crash point
(concurrency 1, lease 1 s) and, if that worker died, a second worker that recovers its tasks
once the lease has expired. Crash points inside a step fire only on a task's first attempt
(``attempt=1``): in the prefork pool they kill the child running the task, the worker gives
the task back and runs it again itself; in the threads pool they kill the whole worker.
The full matrix runs on PostgreSQL, a subset on SQLite.

The prefork worker runs with ``--prefetch-multiplier 1`` so that it, too, holds one task at
a time, as the counts below expect; one more case kills a prefork worker that prefetched
every task right after its claim.

With ``PGTASKS_CRASHPOINT_MODE=raise`` the same points raise a connection error instead:
the worker must survive and every task must complete.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.engine import crashpoints
from tests.faults.invariants import Report, check, given_back, install_history, unfinished
from tests.support.inprocess import wait_for
from tests.support.ledger import text_of
from tests.support.processes import stop, worker_process

APP = "tests.faults.apps.fault_app"
TASKS = 3
STEPS = 3
# Every crash point of the engine but the scheduler's (tests/acceptance/test_beat.py has it)
# and Task.replace's (tests/faults/test_canvas_crashes.py has it).
POINTS = sorted(crashpoints.POINTS - {"after_fire_before_commit", "after_replace_commit"})
STEP_POINTS = frozenset({"before_step_body", "after_step_body_before_checkpoint", "after_checkpoint_commit"})
RAISE = {"PGTASKS_CRASHPOINT_MODE": "raise"}
OUTCOME_POINTS = frozenset({"before_outcome", "after_outcome_commit"})
SQLITE_CASES = [
    ("after_claim_commit", "threads"),
    ("after_step_body_before_checkpoint", "threads"),
    ("after_step_body_before_checkpoint", "prefork"),
    ("before_outcome", "prefork"),
]


def armed(point: str) -> str:
    """The crash point spec: inside steps, step 2 of a task's first attempt only."""
    return f"{point}:function_id=2,attempt=1" if point in STEP_POINTS else point


def expected_given_back(point: str, pool: str) -> range:
    """How many times tasks go back from PENDING to ENQUEUED.

    A dead worker of concurrency 1 leaves its one running task. At the outcome points it may
    hold more: a slot frees when a body returns, so the next tasks can run while the outcome
    waits for its batch; after the outcome commit, that task at least is finished. A prefork
    child dies once per task."""
    if pool == "prefork" and point in STEP_POINTS:
        return range(TASKS, TASKS + 1)
    return {"before_outcome": range(1, TASKS + 1), "after_outcome_commit": range(0, TASKS)}.get(
        point, range(1, 2)
    )


def run_case(database_url: str, tmp_path: Path, point: str, pool: str, prefetch: int = 1) -> Report:
    ledger = tmp_path / "effects.log"
    install_history(database_url)
    client = Client(database_url)
    ids = [client.enqueue("faults.steps", [STEPS]).id for _ in range(TASKS)]
    dies = pool == "threads" or point not in STEP_POINTS
    flags = ("--prefetch-multiplier", str(prefetch)) if pool == "prefork" else ()
    crashing = worker_process(
        database_url,
        ledger,
        "w1",
        app=APP,
        crashpoint=armed(point),
        concurrency=1,
        pool=pool,
        extra_args=flags,
    )
    rescuer = None
    try:
        wait_for(
            lambda: crashing.poll() is not None or not unfinished(database_url, ids),
            timeout=60,
            what=f"the worker to reach {point}",
        )
        if dies:
            # The tasks may read finished an instant before the worker kills itself: after
            # the outcome's commit, the last of them.
            assert crashing.wait(timeout=60) == -signal.SIGKILL
            rescuer = worker_process(database_url, ledger, "w2", app=APP, concurrency=2, pool=pool)
        wait_for(lambda: not unfinished(database_url, ids), timeout=60, what="every task to finish")
        if not dies:
            assert crashing.poll() is None  # only children died; the worker served on
    finally:
        out = "".join(stop(p, signal.SIGKILL) for p in (crashing, rescuer) if p is not None)
    held = 1 if prefetch == 1 else TASKS  # a claim for capacity 1 x prefetch takes them all
    if dies and point not in OUTCOME_POINTS:
        assert f"recovered {held} tasks of executors whose lease expired" in out
    assert [client.AsyncResult(i).get(timeout=5) for i in ids] == [sum(range(STEPS))] * TASKS
    client.close()
    faulted = given_back(database_url)
    assert len(faulted) in (expected_given_back(point, pool) if prefetch == 1 else range(held, held + 1))
    report = check(database_url, ids, faulted_ids=faulted, ledger=ledger)
    assert report.statuses == {"SUCCESS": TASKS}
    assert report.checkpoints == TASKS * STEPS
    assert report.max_attempts == (2 if faulted else 1)
    # Only a step whose body ran and whose checkpoint was lost runs twice: at the crash point
    # between the two, and at the outcome points in the next task, which may be mid-step.
    if point == "after_step_body_before_checkpoint":
        assert report.repeated == len(faulted)
    elif point in OUTCOME_POINTS:
        assert report.repeated <= len(faulted) - (point == "before_outcome")
    else:
        assert report.repeated == 0
    return report


@pytest.mark.parametrize("pool", ["threads", "prefork"])
@pytest.mark.parametrize("point", POINTS)
def test_killed_at_a_crash_point_on_postgres_nothing_is_lost(
    pg_url: str, tmp_path: Path, point: str, pool: str
) -> None:
    run_case(pg_url, tmp_path, point, pool)


def test_a_prefork_worker_killed_holding_prefetched_tasks_loses_nothing(pg_url: str, tmp_path: Path) -> None:
    """Killed right after a claim that took every task (one running, the rest prefetched):
    all are recovered, and each step runs once."""
    report = run_case(pg_url, tmp_path, "after_claim_commit", "prefork", prefetch=4)
    assert report.repeated == 0


@pytest.mark.parametrize(("point", "pool"), SQLITE_CASES)
def test_killed_at_a_crash_point_on_sqlite_nothing_is_lost(
    sqlite_url: str, tmp_path: Path, point: str, pool: str
) -> None:
    run_case(sqlite_url, tmp_path, point, pool)


@pytest.mark.parametrize("point", ["after_step_body_before_checkpoint", "after_checkpoint_commit"])
def test_a_connection_error_at_a_checkpoint_is_survived(pg_url: str, tmp_path: Path, point: str) -> None:
    """A lost connection at a checkpoint write is not the task's failure: the worker stays up,
    the task is given back and resumes from its last checkpoint, and it succeeds."""
    ledger = tmp_path / "effects.log"
    install_history(pg_url)
    client = Client(pg_url)
    ids = [client.enqueue("faults.steps", [STEPS]).id for _ in range(TASKS)]
    worker = worker_process(
        pg_url, ledger, "w1", app=APP, crashpoint=armed(point), concurrency=TASKS, extra_env=RAISE
    )
    try:
        wait_for(
            lambda: worker.poll() is not None or not unfinished(pg_url, ids), what="every task to finish"
        )
        survived = worker.poll() is None
    finally:
        out = stop(worker, signal.SIGQUIT)  # cold shutdown: exit now, show what it printed
    assert survived and "Exception in thread" not in out, out[-3000:]
    report = check(pg_url, ids, faulted_ids=given_back(pg_url), ledger=ledger)
    assert report.statuses == {"SUCCESS": TASKS}, out[-3000:]
    # Before the checkpoint, the step runs again on the next attempt; after it, nothing does.
    assert report.repeated == (TASKS if point == "after_step_body_before_checkpoint" else 0)
    client.close()


@pytest.mark.parametrize("point", sorted(OUTCOME_POINTS))
def test_an_error_writing_an_outcome_does_not_stop_the_worker(
    pg_url: str, tmp_path: Path, point: str
) -> None:
    """An error at one task's outcome write (every time) must not stop the worker from
    writing the outcomes of the tasks that come after it; and once a clean worker takes
    over, that task completes too, recorded once."""
    ledger = tmp_path / "effects.log"
    install_history(pg_url)
    client = Client(pg_url)
    first = client.enqueue("faults.steps", [STEPS]).id
    worker = worker_process(
        pg_url, ledger, "w1", app=APP, crashpoint=f"{point}:task_id={first}", concurrency=1, extra_env=RAISE
    )
    rescuer = None
    try:
        wait_for(lambda: f"{first} end " in text_of(ledger), what="the task")
        later = [client.enqueue("faults.steps", [STEPS]).id for _ in range(TASKS)]
        wait_for(
            lambda: worker.poll() is not None or not unfinished(pg_url, later),
            timeout=10,
            what=f"the tasks after an error at {point} to finish",
        )
        survived = worker.poll() is None
        before = client.engine.get_task(first)
    finally:
        out = stop(worker, signal.SIGQUIT)
    assert survived and "Exception in thread" not in out, out[-3000:]  # no thread of it died
    assert before is not None and before.status.value in ("PENDING", "SUCCESS")
    rescuer = worker_process(pg_url, ledger, "w2", app=APP)
    try:
        wait_for(lambda: not unfinished(pg_url, [first]), what="the rescuer to finish the first task")
    finally:
        stop(rescuer)
    report = check(pg_url, [first, *later], faulted_ids=[first], ledger=ledger)
    assert report.statuses == {"SUCCESS": TASKS + 1}
    client.close()
