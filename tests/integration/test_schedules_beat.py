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
from pgtasks.scheduler import (
    Beat,
    BeatSettings,
    DatabaseClock,
    ManualClock,
    admin,
    define_schedule,
    fire_task_id,
)
from pgtasks.sysdb.records import ExecutorInfo, ListTasksParams
from pgtasks.sysdb.schedule_records import (
    FireCursor,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleStatus,
    SchedulesUpsert,
    ScheduleWrite,
)
from tests.support.apps import opened_app
from tests.support.inprocess import wait_for

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    with opened_app("sched", database_url) as app:
        yield app


def minutes(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def fired_ids(app: App, name: str = "sched.tick") -> list[str]:
    tasks = app.engine.admin.tasks(ListTasksParams(name=name, limit=10_000, newest_first=False))
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
    barrier = threading.Barrier(3)
    fired: list[list[str]] = [[], []]
    lost: list[str] = []
    cursors: list[str | None] = []
    racing = threading.Event()

    def run(n: int) -> None:
        barrier.wait()
        for _ in range(5):  # a few passes each: the loser of a race re-reads and continues
            report = beats[n].tick()
            fired[n] += report.fired
            lost.extend(report.lost)

    def watch() -> None:  # the cursor as a third process sees it, while the beats race
        barrier.wait()
        while racing.is_set():
            cursors.append(app.get_schedule("m").last_fired_at)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    watcher = threading.Thread(target=watch)
    racing.set()
    for t in [*threads, watcher]:
        t.start()
    for t in threads:
        t.join(60)
    racing.clear()
    watcher.join(60)
    for a in apps:
        a.close()
    everything = fired[0] + fired[1]
    assert sorted(everything) == ids("m", *range(1, 91))
    assert max(collections.Counter(everything).values()) == 1
    assert fired_ids(app) == ids("m", *range(1, 91))
    # The compare-and-set: the cursor only moves forward, and ends at the last due time.
    seen = [c for c in cursors if c is not None]
    assert seen == sorted(seen)
    assert app.get_schedule("m").last_fired_at == "2026-11-22T11:30:00Z"
    assert set(lost) <= {"m"}


def test_a_lost_compare_and_set_inserts_nothing_and_the_loser_catches_up(app: App) -> None:
    """Two beats read the same cursor; the second to fire loses, inserts nothing, and its next
    tick starts from the cursor the winner wrote."""
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill=True)
    first, second = Beat(app.engine, clock), Beat(app.engine, clock)
    clock.set(minutes(3))
    stale = app.engine.database.sysdb.schedules_list(ListSchedulesParams(name="m"))[0]
    assert first.tick().fired == ids("m", 1, 2, 3)
    from pgtasks.scheduler.definitions import decode_schedule
    from pgtasks.scheduler.firing import fire_due

    late = fire_due(app.engine, decode_schedule(stale), [minutes(1), minutes(2), minutes(3)])
    assert not late.fired and late.results == ()
    clock.set(minutes(4))
    report = second.tick()
    assert (report.fired, report.lost) == (ids("m", 4), [])
    assert fired_ids(app) == ids("m", 1, 2, 3, 4)


def test_a_backfill_larger_than_one_batch_fires_in_order_across_transactions(database_url: str) -> None:
    application = App("sched", database_url=database_url)
    try:
        clock = ManualClock(T0)
        define_every_minute(application, clock, backfill=True)
        beat = Beat(application.engine, clock, BeatSettings(batch=7))
        clock.set(minutes(60))
        fired: list[str] = []
        cursors = []
        for _ in range(20):
            report = beat.tick()
            fired += report.fired
            cursors.append(application.get_schedule("m").last_fired_at)
            if not report.more_pending:
                break
        assert fired == [fire_task_id("m", minutes(n)) for n in range(1, 61)]  # oldest first
        assert len(cursors) == 9 and cursors == sorted(cursors)  # 60 due times, 7 per transaction
        assert beat.tick().fired == []
    finally:
        application.close()


def test_a_manual_backfill_larger_than_one_chunk_and_one_over_the_cap(app: App) -> None:
    clock = ManualClock(T0)
    admin.store(app.engine, [define_schedule("s", "sched.tick", every=1)], clock)
    clock.set(minutes(30))
    report = admin.backfill(app.engine, "s", minutes(10), minutes(20), clock)
    expected = [fire_task_id("s", minutes(10) + dt.timedelta(seconds=n)) for n in range(601)]
    assert report.fired == expected and len(expected) > admin.BACKFILL_CHUNK
    clock.set(T0 + dt.timedelta(days=3))
    too_many = f"more than {admin.MAX_BACKFILL_FIRES} due times .* nothing fired"
    with pytest.raises(ConfigurationError, match=too_many):
        admin.backfill(app.engine, "s", T0 + dt.timedelta(hours=1), T0 + dt.timedelta(days=2), clock)
    assert fired_ids(app) == sorted(expected)  # refused before the first chunk, not after


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


def test_scheduled_tasks_go_to_the_latest_version(app: App) -> None:
    clock = ManualClock(T0)
    define_every_minute(app, clock, backfill=False)
    sysdb = app.engine.database.sysdb
    queues = (app.settings.default_queue,)
    for version, executor in (("v1", "w-old"), ("v2", "w-new")):
        start = sysdb.now_ms()  # versions are ordered by the database clock (ms)
        wait_for(lambda: sysdb.now_ms() > start, timeout=5, what="the database clock to move")  # noqa: B023
        sysdb.version_register(version)
        sysdb.executor_register(ExecutorInfo(executor, "host", 1, version, queues=queues))
    clock.set(minutes(1))
    [task_id] = Beat(app.engine, clock).tick().fired
    task = sysdb.task_get(task_id)
    assert task is not None and task.application_version == "v2"


def test_app_api_trigger_backfill_pause_and_errors(app: App) -> None:
    record = app.schedule("api", "sched.tick", "0 3 * * *", timezone="Asia/Kolkata", args=[1], queue="q")
    assert (record.status, record.queue_name, record.timezone) == (ScheduleStatus.ACTIVE, "q", "Asia/Kolkata")
    handle = app.trigger_schedule("api")
    assert handle.id.startswith("sched-api-manual-")
    task = app.engine.database.sysdb.task_get(handle.id)
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


def test_rows_that_cannot_fire_do_not_stop_the_others(app: App, caplog: pytest.LogCaptureFixture) -> None:
    """Rows edited by hand into something unreadable are logged once each and skipped."""
    clock = ManualClock(T0)
    sysdb = app.engine.database.sysdb
    broken = (
        ScheduleWrite(name="bad-cron", task_name="sched.tick", schedule="every day at noon"),
        ScheduleWrite(name="bad-args", task_name="sched.tick", schedule="* * * * *", context='{"args": 5}'),
        ScheduleWrite(name="bad-json", task_name="sched.tick", schedule="* * * * *", options="[1"),
        ScheduleWrite(name="bad-cursor", task_name="sched.tick", schedule="* * * * *"),
        ScheduleWrite(name="bad-zone", task_name="sched.tick", schedule="* * * * *", timezone="Mars/Base"),
    )
    sysdb.schedules_upsert(SchedulesUpsert(broken, "2026-11-22T10:00:00Z"))
    no_task = ScheduleFire("bad-cursor", (), FireCursor(None, "2026-11-22T10:00:00Z", "yesterday"))
    assert sysdb.schedule_fire(no_task).fired  # a cursor that is not a due time
    define_every_minute(app, clock, backfill=False)
    beat = Beat(app.engine, clock)
    clock.set(minutes(1))
    with caplog.at_level("ERROR", logger="pgtasks.beat"):
        assert beat.tick().fired == ids("m", 1)
        clock.set(minutes(2))
        assert beat.tick().fired == ids("m", 2)
    errors = sorted(r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    names = ("bad-args", "bad-cron", "bad-cursor", "bad-json", "bad-zone")
    assert [e.split(":")[0] for e in errors] == [f"schedule {name} cannot fire" for name in names]
    assert "args must be a JSON array" in errors[0] and "'yesterday' is not a due time" in errors[2]
    assert "unknown timezone 'Mars/Base'" in errors[4]
    assert fired_ids(app) == ids("m", 1, 2)


def test_the_default_clock_is_the_database_servers(app: App) -> None:
    schedules = app.engine.schedules
    before = schedules.now_ms()
    now = DatabaseClock(schedules).now()
    after = schedules.now_ms()
    assert before <= now.timestamp() * 1000 <= after + 1
    assert isinstance(Beat(app.engine).clock, DatabaseClock)
    stored = app.schedule("c", "sched.tick", "0 3 * * *")
    since = dt.datetime.strptime(stored.active_since or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before // 1000 - 1 <= since.timestamp() <= schedules.now_ms() / 1000


def test_api_and_configured_schedules_do_not_take_over_each_others_schedules(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    app.schedule("shared", "sched.tick", "0 3 * * *")
    configured = [
        define_schedule("shared", "sched.other", every=60),
        define_schedule("mine", "sched.tick", every=60),
    ]
    app.add_schedule_source(lambda: configured)
    beat = Beat(app.engine, ManualClock(T0))
    with caplog.at_level("WARNING", logger="pgtasks.beat"):
        stored = beat.sync(app.beat_definitions(), app.beat_source)
    assert [r.name for r in stored] == ["mine"]
    assert "beat_schedule entries skipped: names already taken by 'shared' (defined by api)" in caplog.text
    assert app.get_schedule("shared").task_name == "sched.tick"
    with pytest.raises(ConfigurationError, match=r"'mine' \(defined by config:sched\)"):
        app.schedule("mine", "sched.tick", "0 4 * * *")
    # Another app on the same database syncing its own beat_schedule leaves this one's alone.
    other = App("other", database_url=app.engine.settings.database_url)
    try:
        other.add_schedule_source(list)
        Beat(other.engine, ManualClock(T0)).sync(other.beat_definitions(), other.beat_source)
    finally:
        other.close()
    assert app.get_schedule("mine").status is ScheduleStatus.ACTIVE
    configured.clear()
    with caplog.at_level("WARNING", logger="pgtasks.beat"):
        beat.sync(app.beat_definitions(), app.beat_source)
    assert "schedule mine is no longer configured (config:sched): now INACTIVE" in caplog.text
    app.add_schedule_source(lambda: ["not a definition"])
    with pytest.raises(ConfigurationError, match="returned 'not a definition', not a definition made by"):
        app.beat_definitions()
