"""Real `pgtasks beat` processes (and workers with -B) racing on a six-field, every-second
schedule: every due time fires exactly once, however many run and whichever is killed."""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import re
import signal
from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.records import ListTasksParams
from pgtasks.sysdb.schedule_records import ListSchedulesParams
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.ledger import text_of
from tests.support.processes import beat_process, effects, stop, worker_process

APP = "tests.acceptance.apps.beat_app"
FIRED = re.compile(r"fired tick due (\S+) as task (\S+)")
WINDOW = 5  # due times fired while every process races, beyond those fired before


def fired_due_times(logs: list[Path]) -> collections.Counter[str]:
    """How many times each due time was fired, by what the processes logged."""
    counts: collections.Counter[str] = collections.Counter()
    for log in logs:
        counts.update(m.group(1) for m in FIRED.finditer(text_of(log)))
    return counts


def ready(log: Path) -> bool:
    return "beat ready" in text_of(log)


def fired_in_db(database_url: str) -> list[str]:
    db = open_system_database(database_url)
    try:
        tasks = db.tasks_list(ListTasksParams(name="beatapp.tick", limit=10_000, newest_first=False))
        return sorted(t.task_id for t in tasks)
    finally:
        db.close()


def assert_exactly_once_and_contiguous(
    counts: collections.Counter[str], database_url: str, unlogged: int = 0
) -> list[str]:
    """The due times in the database are contiguous (none skipped), and each was reported
    inserted by exactly one process (the ids make a second row impossible; the logs show that
    no second process believed it fired the same due time). ``unlogged``: how many fires a
    process killed from outside may have committed without living to log them."""
    in_db = fired_in_db(database_url)
    due = [task_id.removeprefix("sched-tick-") for task_id in in_db]
    instants = [dt.datetime.strptime(d, "%Y-%m-%dT%H:%M:%SZ") for d in due]
    gaps = [(a, b) for a, b in itertools.pairwise(instants) if b - a != dt.timedelta(seconds=1)]
    assert due and gaps == []
    assert max(counts.values()) == 1, [d for d, n in counts.items() if n > 1]
    assert set(counts) <= set(due)
    assert len(set(due) - set(counts)) <= unlogged, sorted(set(due) - set(counts))
    return due


def race(database_url: str, tmp_path: Path, processes: int) -> list[str]:
    Client(database_url).engine.admin.migrate()  # one migration up front; the beats race on fires only
    logs = [tmp_path / f"beat-{n}.log" for n in range(processes)]
    beats = [beat_process(database_url, log) for log in logs]
    try:
        wait_for(lambda: all(ready(log) for log in logs), timeout=60, what="every beat to start")
        before = len(fired_in_db(database_url))
        wait_for(lambda: len(fired_in_db(database_url)) >= before + WINDOW, timeout=60, what="fires")
    finally:
        outputs = [stop(b) for b in beats]
    assert [b.returncode for b in beats] == [0] * processes, outputs
    return assert_exactly_once_and_contiguous(fired_due_times(logs), database_url)


@pytest.mark.parametrize("processes", [2, 5])
def test_many_beat_processes_fire_each_due_time_once(pg_url: str, tmp_path: Path, processes: int) -> None:
    due = race(pg_url, tmp_path, processes)
    assert len(due) >= WINDOW


def test_two_beat_processes_on_sqlite_fire_each_due_time_once(sqlite_url: str, tmp_path: Path) -> None:
    assert len(race(sqlite_url, tmp_path, 2)) >= WINDOW


def test_a_beat_killed_mid_fire_leaves_the_due_time_to_the_others(database_url: str, tmp_path: Path) -> None:
    """The first beat dies (SIGKILL at the crash point, between the insert and the commit) on
    its first fire; the survivors fire that due time, once. Then one survivor is killed from
    outside while firing every second; the last one carries on, still exactly once."""
    crashed_log = tmp_path / "crashed.log"
    crashed = beat_process(database_url, crashed_log, crashpoint="after_fire_before_commit")
    assert crashed.wait(timeout=60) == -signal.SIGKILL
    assert "fired tick" not in crashed_log.read_text()
    db = open_system_database(database_url)
    [row] = db.schedules_list(ListSchedulesParams(name="tick"))
    db.close()
    assert row.last_fired_at is None and row.active_since is not None  # the fire rolled back
    first_due = dt.datetime.strptime(row.active_since, "%Y-%m-%dT%H:%M:%SZ") + dt.timedelta(seconds=1)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    survivors = [beat_process(database_url, log) for log in logs]
    try:
        wait_for(lambda: all(ready(log) for log in logs), timeout=60, what="both beats to start")
        before = len(fired_in_db(database_url))
        wait_for(lambda: len(fired_in_db(database_url)) >= before + 2, timeout=60, what="fires")
        survivors[0].kill()
        survivors[0].wait(30)
        after_kill = len(fired_in_db(database_url))
        wait_for(
            lambda: len(fired_in_db(database_url)) >= after_kill + 3, timeout=60, what="fires after the kill"
        )
    finally:
        for process in survivors:
            stop(process)
    # The SIGKILL from outside can land between a fire's commit and its log line: that one fire
    # is in the database, unlogged (still once: no other process logged it).
    due = assert_exactly_once_and_contiguous(fired_due_times(logs), database_url, unlogged=1)
    assert due[0] == first_due.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_workers_with_embedded_beat_run_each_due_time_once(pg_url: str, tmp_path: Path) -> None:
    """Two `pgtasks worker -B`: each fires and runs the schedule; every due time's task runs
    once, on the version the workers registered."""
    ledger = tmp_path / "ledger"
    logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
    workers = [
        worker_process(pg_url, ledger, f"bw{n}", app=APP, extra_args=("-B",), output=log)
        for n, log in enumerate(logs, 1)
    ]
    try:
        wait_for(lambda: all(ready_worker(log) for log in logs), timeout=60, what="both workers")
        wait_for(lambda: len(effects(ledger)) >= WINDOW + 1, timeout=60, what="scheduled tasks to run")
    finally:
        outputs = [stop(process) for process in workers]
    # SIGTERM stops the embedded beat first, then the worker drains and exits cleanly.
    assert [w.returncode for w in workers] == [0, 0], outputs
    assert all("beat stopped" in log.read_text() for log in logs)
    ran = effects(ledger)
    assert ran and max(ran.values()) == 1
    counts = fired_due_times(logs)
    assert_exactly_once_and_contiguous(counts, pg_url)
    assert {task_id for task_id, _ in ran} <= {f"sched-tick-{d}" for d in counts}
    db = open_system_database(pg_url)
    [version] = {v for v, _ in db.versions_list()}
    task = db.task_get(next(iter(ran))[0])
    db.close()
    assert task is not None and task.application_version == version


def ready_worker(log: Path) -> bool:
    text = text_of(log)
    return "beat started in this worker" in text and " ready." in text


def test_schedule_commands(sqlite_url: str) -> None:
    client = Client(sqlite_url)
    from pgtasks.scheduler import admin, define_schedule

    admin.store(client.engine, [define_schedule("nightly", "beatapp.tick", cron="0 2 * * *", timezone="UTC")])
    client.close()
    listing = run_pgtasks("schedule", "list", url=sqlite_url)
    assert listing.returncode == 0 and re.search(
        r"nightly\s+ACTIVE\s+0 2 \* \* \* \(UTC\)\s+next \S+Z", listing.stdout
    )
    paused = run_pgtasks("schedule", "pause", "nightly", url=sqlite_url)
    assert paused.returncode == 0 and "PAUSED" in paused.stdout and "next -" in paused.stdout
    assert "ACTIVE" in run_pgtasks("schedule", "resume", "nightly", url=sqlite_url).stdout
    triggered = run_pgtasks("schedule", "trigger", "nightly", url=sqlite_url)
    assert triggered.returncode == 0 and triggered.stdout.startswith("sched-nightly-manual-")
    since = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=2)).strftime("%Y-%m-%dT00:00:00Z")
    backfilled = run_pgtasks("schedule", "backfill", "nightly", "--since", since, url=sqlite_url)
    assert backfilled.returncode == 0 and "fired sched-nightly-" in backfilled.stdout
    assert re.search(r"backfill nightly: [23] fired, 0 had fired before", backfilled.stdout)
    bad = run_pgtasks("schedule", "backfill", "nightly", "--since", "yesterday", url=sqlite_url)
    assert bad.returncode == 2 and "--since takes an ISO time" in bad.stderr
    missing = run_pgtasks("schedule", "pause", "nope", url=sqlite_url)
    assert missing.returncode == 2 and "no schedule named 'nope'" in missing.stderr
    assert run_pgtasks("schedule", "delete", "nightly", url=sqlite_url).stdout.strip() == "deleted nightly"
    assert run_pgtasks("schedule", "delete", "nightly", url=sqlite_url).returncode == 1


def test_beat_rejects_a_bad_schedule_at_start(sqlite_url: str) -> None:
    env_cron = {"BEAT_TEST_CRON": "0 0 30 2 *"}
    done = run_pgtasks("beat", "-A", APP, url=sqlite_url, env=env_cron, timeout=60)
    assert done.returncode == 2
    assert "schedule 'tick': cron expression '0 0 30 2 *' never matches" in done.stderr
