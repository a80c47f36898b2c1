"""The beat against a real database (PostgreSQL and SQLite), driven by an injectable clock:
backfill after downtime, racing beats and backfills, clock jumps, runtime changes, config sync,
and the version scheduled tasks go to."""

from __future__ import annotations

import collections
import datetime as dt
import threading
from collections.abc import Iterator

import pytest

from pgtasks import App
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler import Beat, ManualClock, admin, crontab, define_schedule, fire_task_id
from pgtasks.sysdb.records import ExecutorInfo, ListTasksParams
from pgtasks.sysdb.schedule_records import ScheduleStatus

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    application = App("sched", database_url=database_url)
    yield application
    application.close()


def minutes(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def fired_ids(app: App, name: str = "sched.tick") -> list[str]:
    tasks = app.engine.sysdb.tasks_list(ListTasksParams(name=name, limit=10_000, newest_first=False))
    return sorted(t.task_id for t in tasks)


def ids(name: str, *offsets: int) -> list[str]:
    return sorted(fire_task_id(name, minutes(n)) for n in offsets)


def define_every_minute(app: App, clock: ManualClock, backfill: bool, name: str = "m") -> None:
    definition = define_schedule(name, "sched.tick", cron="* * * * *", automatic_backfill=backfill)
    admin.store(app.engine, [definition], clock)


@pytest.mark.parametrize("backfill", [True, False])
def test_down_for_an_hour_fires_exactly_the_expected_due_times(app: App, backfill: bool) -> None:
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill)
    beat = Beat(app.engine, clock)
    clock.set(minutes(1))
    assert beat.tick().fired == ids("m", 1)
    clock.set(minutes(61) + dt.timedelta(seconds=30))  # the schedulers were down for an hour
    expected = ids("m", *range(2, 62)) if backfill else ids("m", 61)
    report = beat.tick()
    assert sorted(report.fired) == expected
    assert fired_ids(app) == sorted(ids("m", 1) + expected)
    assert beat.tick().fired == []
    [row] = app.schedules_list()
    assert row.last_fired_at == "2026-11-22T11:01:00Z"


def test_two_beats_backfilling_at_once_fire_each_due_time_once(database_url: str, app: App) -> None:
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill=True)
    clock.set(minutes(90))
    apps = [App("sched", database_url=database_url) for _ in range(2)]
    beats = [Beat(a.engine, clock) for a in apps]
    barrier = threading.Barrier(2)
    fired: list[list[str]] = [[], []]

    def run(n: int) -> None:
        barrier.wait()
        for _ in range(5):  # a few passes each: the loser of a race re-reads and continues
            fired[n] += beats[n].tick().fired

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for a in apps:
        a.close()
    everything = fired[0] + fired[1]
    assert sorted(everything) == ids("m", *range(1, 91))
    assert max(collections.Counter(everything).values()) == 1
    assert fired_ids(app) == ids("m", *range(1, 91))


def test_two_manual_backfills_at_once_fire_each_due_time_once(database_url: str, app: App) -> None:
    clock = ManualClock(T0)
    definition = define_schedule("m", "sched.tick", cron="*/5 * * * *")
    admin.store(app.engine, [definition], clock)
    clock.set(minutes(120))
    apps = [App("sched", database_url=database_url) for _ in range(2)]
    barrier = threading.Barrier(2)
    reports: list[admin.BackfillReport] = []

    def run(a: App) -> None:
        barrier.wait()
        reports.append(admin.backfill(a.engine, "m", minutes(-60), clock=clock))

    threads = [threading.Thread(target=run, args=(a,)) for a in apps]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for a in apps:
        a.close()
    expected = ids("m", *range(-60, 121, 5))
    assert sorted(reports[0].fired + reports[1].fired) == expected
    assert sorted(reports[0].existing + reports[1].existing) == expected
    assert fired_ids(app) == expected
    # The beat, starting later, does not fire the backfilled due times again.
    beat = Beat(app.engine, clock)
    clock.set(minutes(125))
    assert beat.tick().fired == ids("m", 125)


def test_clock_jumps_forward_follow_the_backfill_rule_and_backward_fire_nothing_twice(app: App) -> None:
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill=False)
    beat = Beat(app.engine, clock)
    clock.set(minutes(1))
    beat.tick()
    clock.set(minutes(1) + dt.timedelta(hours=3))  # wall clock corrected forward by 3 hours
    assert beat.tick().fired == ids("m", 181)
    clock.set(minutes(120))  # and back by an hour
    for _ in range(61):
        assert beat.tick().fired == []
        clock.set(clock.now() + dt.timedelta(minutes=1))
    assert clock.now() == minutes(181) and beat.tick().fired == []  # 11:01 has fired already
    clock.set(minutes(182))
    assert beat.tick().fired == ids("m", 182)
    assert fired_ids(app) == ids("m", 1, 181, 182)


def test_runtime_changes_reach_a_running_beat(app: App) -> None:
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill=True)
    beat = Beat(app.engine, clock)
    clock.set(minutes(1))
    assert beat.tick().fired == ids("m", 1)
    admin.set_status(app.engine, "m", ScheduleStatus.PAUSED, clock)
    clock.set(minutes(30))
    assert beat.tick().fired == []
    admin.set_status(app.engine, "m", ScheduleStatus.ACTIVE, clock)  # resumed at 10:30
    clock.set(minutes(31))
    assert beat.tick().fired == ids("m", 31)  # the paused half hour is not backfilled
    # A new timing, stored by another process, is used from the next tick.
    admin.store(app.engine, [define_schedule("m", "sched.tick", cron="*/10 * * * *")], clock)
    clock.set(minutes(40))
    assert beat.tick().fired == ids("m", 40)
    assert app.delete_schedule("m") and beat.tick().fired == []


def test_beat_schedule_and_add_periodic_task_are_synced_and_removed_entries_deactivated(app: App) -> None:
    clock = ManualClock(T0)
    app.timezone = "Europe/Paris"
    app.beat_schedule = {
        "paris-9am": {"task": "sched.tick", "schedule": crontab(minute=0, hour=9)},
        "every-2m": {"task": "sched.tick", "schedule": dt.timedelta(minutes=2), "args": (1,)},
    }
    key = app.add_periodic_task(300.0, "sched.other", args=(2,), name="five")
    assert key == "five"
    beat = Beat(app.engine, clock)
    beat.sync(app.beat_definitions())
    stored = {s.name: s for s in app.schedules_list()}
    assert set(stored) == {"paris-9am", "every-2m", "five"}
    assert stored["paris-9am"].timezone == "Europe/Paris" and stored["every-2m"].interval_seconds == 120
    clock.set(minutes(2))
    assert beat.tick().fired == [fire_task_id("every-2m", minutes(2))]
    clock.set(minutes(5))
    assert sorted(beat.tick().fired) == [
        fire_task_id("every-2m", minutes(4)),
        fire_task_id("five", minutes(5)),
    ]
    # A later deploy drops two entries: they are deactivated, not deleted.
    del app.beat_schedule["every-2m"], app.beat_schedule["five"]
    Beat(app.engine, clock).sync(app.beat_definitions())
    status = {s.name: s.status for s in app.schedules_list()}
    assert status == {"paris-9am": "ACTIVE", "every-2m": "INACTIVE", "five": "INACTIVE"}
    clock.set(minutes(10))
    assert beat.tick().fired == []
    clock.set(dt.datetime(2026, 11, 23, 8, 0, tzinfo=UTC))  # 09:00 in Paris (UTC+1)
    assert beat.tick().fired == [fire_task_id("paris-9am", dt.datetime(2026, 11, 23, 8, 0, tzinfo=UTC))]


def test_scheduled_tasks_go_to_the_latest_version(app: App) -> None:
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill=False)
    sysdb = app.engine.sysdb
    for version, executor in (("v1", "w-old"), ("v2", "w-new")):
        start = sysdb.now_ms()
        while sysdb.now_ms() <= start:  # versions are ordered by the database clock (ms)
            pass
        sysdb.version_register(version)
        sysdb.executor_register(ExecutorInfo(executor, "host", 1, version))
    clock.set(minutes(1))
    [task_id] = Beat(app.engine, clock).tick().fired
    task = sysdb.task_get(task_id)
    assert task is not None and task.application_version == "v2"


def test_app_api_trigger_backfill_pause_and_errors(app: App) -> None:
    record = app.schedule("api", "sched.tick", "0 3 * * *", timezone="Asia/Kolkata", args=[1], queue="q")
    assert (record.status, record.queue_name, record.timezone) == (ScheduleStatus.ACTIVE, "q", "Asia/Kolkata")
    handle = app.trigger_schedule("api")
    assert handle.id.startswith("sched-api-manual-")
    task = app.engine.sysdb.task_get(handle.id)
    assert task is not None and task.queue_name == "q" and task.inputs.startswith('{"args":[1]')
    today = dt.datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    report = app.backfill_schedule("api", today - dt.timedelta(days=3))
    assert len(report.fired) in (3, 4) and report.existing == []  # 03:00 IST is 21:30 UTC
    again = app.backfill_schedule("api", today - dt.timedelta(days=3))
    assert again.fired == [] and sorted(again.existing) == sorted(report.fired)
    assert app.pause_schedule("api").status is ScheduleStatus.PAUSED
    assert app.resume_schedule("api").status is ScheduleStatus.ACTIVE
    with pytest.raises(ConfigurationError, match="no schedule named 'nope'"):
        app.pause_schedule("nope")
    with pytest.raises(ConfigurationError, match=r"until .* is in the future"):
        app.backfill_schedule("api", today, today + dt.timedelta(days=2))
    with pytest.raises(
        ConfigurationError, match="unknown schedule status 'sleeping'; one of ACTIVE, PAUSED, INACTIVE"
    ):
        app.schedules_list("sleeping")
    with pytest.raises(ConfigurationError, match="field hour"):
        app.schedule("bad", "sched.tick", "0 24 * * *")
    assert [s.name for s in app.schedules_list("active")] == ["api"]


def test_a_row_that_cannot_fire_does_not_stop_the_others(app: App, caplog: pytest.LogCaptureFixture) -> None:
    from pgtasks.sysdb.schedule_records import SchedulesUpsert, ScheduleWrite

    clock = ManualClock(T0)
    broken = ScheduleWrite(name="broken", task_name="sched.tick", schedule="every day at noon")
    app.engine.sysdb.schedules_upsert(SchedulesUpsert((broken,), "2026-11-22T10:00:00Z"))
    define_every_minute(app, clock, backfill=False)
    beat = Beat(app.engine, clock)
    clock.set(minutes(1))
    with caplog.at_level("ERROR", logger="pgtasks.beat"):
        assert beat.tick().fired == ids("m", 1)
        clock.set(minutes(2))
        assert beat.tick().fired == ids("m", 2)
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and errors[0].startswith("schedule broken cannot fire: cron expression")
