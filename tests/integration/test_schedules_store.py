"""Conformance of the schedule methods of the system database, on PostgreSQL and on SQLite."""

from __future__ import annotations

import threading

import pytest

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import ExecutorInfo, NewTask
from pgtasks.sysdb.schedule_records import (
    FireCursor,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleStatus,
    ScheduleStatusChange,
    SchedulesUpsert,
    ScheduleWrite,
)
from tests.support.inprocess import wait_for

T0 = "2026-11-22T10:00:00Z"
T1 = "2026-11-22T10:05:00Z"
T2 = "2026-11-22T10:10:00Z"


def write(name: str = "s", **kw: object) -> ScheduleWrite:
    return ScheduleWrite(**{"name": name, "task_name": "proj.tick", "schedule": "*/5 * * * *", **kw})  # type: ignore[arg-type]


def task(task_id: str) -> NewTask:
    return NewTask(task_id=task_id, name="proj.tick", inputs='{"args":[],"kwargs":{}}', queue_name="default")


def fire(name: str, ids: list[str], expected: str | None, since: str | None, new: str) -> ScheduleFire:
    return ScheduleFire(name, tuple(task(i) for i in ids), FireCursor(expected, since, new))


def test_upsert_creates_then_updates_without_resetting_history(sysdb: SystemDatabase) -> None:
    [created] = sysdb.schedules_upsert(SchedulesUpsert((write(queue_name="q1"),), T0)).stored
    assert (created.status, created.active_since, created.last_fired_at) == (ScheduleStatus.ACTIVE, T0, None)
    assert created.cursor == T0 and created.source == "api" and created.queue_name == "q1"
    assert sysdb.schedule_fire(fire("s", ["a"], None, T0, T1)).fired
    # Same timing, new arguments: the history is kept.
    [same] = sysdb.schedules_upsert(SchedulesUpsert((write(context='{"args": [1]}'),), T2)).stored
    assert (same.active_since, same.last_fired_at, same.context) == (T0, T1, '{"args": [1]}')
    # A new timing restarts at the new active_since.
    changed = ScheduleWrite(name="s", task_name="proj.tick", schedule="0 * * * *", timezone="Europe/Paris")
    [moved] = sysdb.schedules_upsert(SchedulesUpsert((changed,), T2)).stored
    assert (moved.active_since, moved.cursor, moved.timezone) == (T2, T2, "Europe/Paris")


def test_interval_and_options_round_trip(sysdb: SystemDatabase) -> None:
    stored = ScheduleWrite(
        name="iv",
        task_name="proj.tick",
        schedule="every 30s",
        interval_seconds=30,
        day_and=True,
        options='{"priority": 3}',
        automatic_backfill=True,
        backfill_window_seconds=600,
        source="config:proj",
    )
    sysdb.schedules_upsert(SchedulesUpsert((stored,), T0))
    [got] = sysdb.schedules_list(ListSchedulesParams(name="iv"))
    assert (got.interval_seconds, got.day_and, got.options, got.automatic_backfill) == (
        30,
        True,
        '{"priority": 3}',
        True,
    )
    assert (got.backfill_window_seconds, got.source, got.task_name) == (600, "config:proj", "proj.tick")
    assert got.created_at > 0 and got.updated_at >= got.created_at


def test_sync_deactivates_configured_schedules_that_left_the_config(sysdb: SystemDatabase) -> None:
    config = (write("a", source="config:p"), write("b", source="config:p"))
    sysdb.schedules_upsert(SchedulesUpsert(config, T0, deactivate_missing_from="config:p"))
    sysdb.schedules_upsert(SchedulesUpsert((write("api-made"),), T0))
    sysdb.schedules_upsert(SchedulesUpsert((write("other-app", source="config:q"),), T0))
    done = sysdb.schedules_upsert(
        SchedulesUpsert((write("a", source="config:p"),), T1, deactivate_missing_from="config:p")
    )
    assert (done.deactivated, done.refused, [r.name for r in done.stored]) == (["b"], [], ["a"])
    status = {s.name: s.status for s in sysdb.schedules_list(ListSchedulesParams())}
    assert status == {
        "a": ScheduleStatus.ACTIVE,
        "b": ScheduleStatus.INACTIVE,
        "api-made": ScheduleStatus.ACTIVE,
        "other-app": ScheduleStatus.ACTIVE,  # another app's beat_schedule is not this app's to end
    }
    # Back in the config: active again, from the new active_since (no backfill of the gap).
    [back] = sysdb.schedules_upsert(SchedulesUpsert((write("b", source="config:p"),), T2)).stored
    assert (back.status, back.active_since) == (ScheduleStatus.ACTIVE, T2)
    inactive = sysdb.schedules_list(ListSchedulesParams(statuses=(ScheduleStatus.INACTIVE,)))
    assert inactive == []


def test_a_schedule_belongs_to_its_source(sysdb: SystemDatabase) -> None:
    sysdb.schedules_upsert(SchedulesUpsert((write("shared", context='{"args": [1]}'),), T0))
    # A beat_schedule entry with the name of an API schedule does not take it over...
    taken = sysdb.schedules_upsert(
        SchedulesUpsert(
            (write("shared", source="config:p", schedule="0 * * * *"), write("mine", source="config:p")),
            T1,
            deactivate_missing_from="config:p",
        )
    )
    assert (taken.refused, [r.name for r in taken.stored], taken.deactivated) == (["shared"], ["mine"], [])
    [kept] = sysdb.schedules_list(ListSchedulesParams(name="shared"))
    assert (kept.source, kept.schedule, kept.context, kept.active_since) == (
        "api",
        "*/5 * * * *",
        '{"args": [1]}',
        T0,
    )
    # ...and the API does not take over a configured one; once INACTIVE, anyone may.
    assert sysdb.schedules_upsert(SchedulesUpsert((write("mine"),), T1)).refused == ["mine"]
    sysdb.schedules_upsert(SchedulesUpsert((), T1, deactivate_missing_from="config:p"))
    [reused] = sysdb.schedules_upsert(SchedulesUpsert((write("mine"),), T2)).stored
    assert (reused.source, reused.status, reused.active_since) == ("api", ScheduleStatus.ACTIVE, T2)


def test_pause_resume_and_delete(sysdb: SystemDatabase) -> None:
    sysdb.schedules_upsert(SchedulesUpsert((write(),), T0))
    paused = sysdb.schedule_set_status(ScheduleStatusChange("s", ScheduleStatus.PAUSED, T1))
    assert paused is not None and (paused.status, paused.active_since) == (ScheduleStatus.PAUSED, T0)
    # A paused schedule does not fire, and a config sync does not unpause it.
    assert not sysdb.schedule_fire(fire("s", ["x"], None, T0, T1)).fired
    assert sysdb.task_get("x") is None
    [still] = sysdb.schedules_upsert(SchedulesUpsert((write(),), T1)).stored
    assert still.status is ScheduleStatus.PAUSED
    resumed = sysdb.schedule_set_status(ScheduleStatusChange("s", ScheduleStatus.ACTIVE, T2))
    assert resumed is not None and (resumed.status, resumed.active_since) == (ScheduleStatus.ACTIVE, T2)
    again = sysdb.schedule_set_status(
        ScheduleStatusChange("s", ScheduleStatus.ACTIVE, "2030-01-01T00:00:00Z")
    )
    assert again is not None and again.active_since == T2  # resuming an active schedule changes nothing
    assert sysdb.schedule_set_status(ScheduleStatusChange("nope", ScheduleStatus.PAUSED, T0)) is None
    assert sysdb.schedule_delete("s") and not sysdb.schedule_delete("s")
    assert sysdb.schedules_list(ListSchedulesParams()) == []


def test_fire_inserts_tasks_and_moves_the_cursor_with_compare_and_set(sysdb: SystemDatabase) -> None:
    sysdb.schedules_upsert(SchedulesUpsert((write(),), T0))
    first = sysdb.schedule_fire(fire("s", ["f1", "f2"], None, T0, T1))
    assert first.fired and first.inserted == ["f1", "f2"]
    # A second scheduler that read the old cursor loses: nothing inserted, cursor unchanged.
    stale = sysdb.schedule_fire(fire("s", ["f1", "f2", "f3"], None, T0, T2))
    assert not stale.fired and sysdb.task_get("f3") is None
    [row] = sysdb.schedules_list(ListSchedulesParams(name="s"))
    assert row.last_fired_at == T1
    # A stale active_since loses too (the schedule was resumed or redefined meanwhile).
    assert not sysdb.schedule_fire(fire("s", ["f4"], T1, "2000-01-01T00:00:00Z", T2)).fired
    assert sysdb.schedule_fire(fire("s", ["f4"], T1, T0, T2)).fired


def test_an_existing_task_id_is_kept_not_an_error(sysdb: SystemDatabase) -> None:
    sysdb.schedules_upsert(SchedulesUpsert((write(),), T0))
    sysdb.tasks_enqueue([task("dup")])
    result = sysdb.schedule_fire(fire("s", ["dup", "new"], None, T0, T1))
    assert result.fired and result.inserted == ["new"]
    assert [(r.task_id, r.inserted) for r in result.results] == [("dup", False), ("new", True)]
    manual = sysdb.schedule_fire(ScheduleFire("s", (task("dup"), task("other"))))
    assert manual.fired and manual.inserted == ["other"]
    [row] = sysdb.schedules_list(ListSchedulesParams(name="s"))
    assert row.last_fired_at == T1  # a fire without a cursor leaves it alone


def test_fired_tasks_go_to_the_newest_version_with_a_live_worker_on_their_queue(
    sysdb: SystemDatabase,
) -> None:
    sysdb.schedules_upsert(SchedulesUpsert((write(),), T0))
    unpinned = sysdb.schedule_fire(ScheduleFire("s", (task("t0"),)))
    assert unpinned.application_version is None and sysdb.task_get("t0").application_version is None  # type: ignore[union-attr]
    sysdb.version_register("v1")
    wait_for_clock_tick(sysdb)
    sysdb.version_register("v2")
    assert sysdb.schedule_fire(ScheduleFire("s", (task("t1"),))).application_version == "v2"
    assert sysdb.task_get("t1").application_version == "v2"  # type: ignore[union-attr]
    # Only v1 has a live worker on the task's queue (v2 was rolled back): v1 runs them.
    sysdb.executor_register(ExecutorInfo("w1", "host", 1, "v1", queues=("other", "default")))
    assert sysdb.schedule_fire(ScheduleFire("s", (task("t2"),))).application_version == "v1"
    # A v2 worker on another queue, or whose heartbeat is older than its lease, does not count.
    sysdb.executor_register(ExecutorInfo("w2", "host", 2, "v2", queues=("defaults",)))
    sysdb.executor_register(ExecutorInfo("w3", "host", 3, "v2", queues=("default",), lease_ms=1))
    wait_for_clock_tick(sysdb)
    wait_for_clock_tick(sysdb)
    assert sysdb.schedule_fire(ScheduleFire("s", (task("t3"),))).application_version == "v1"
    sysdb.executor_register(ExecutorInfo("w4", "host", 4, "v2", queues=("default",)))
    assert sysdb.schedule_fire(ScheduleFire("s", (task("t4"),))).application_version == "v2"
    no_pin = sysdb.schedule_fire(ScheduleFire("s", (task("t5"),), pin_latest_version=False))
    assert sysdb.task_get("t5").application_version is None and no_pin.application_version is None  # type: ignore[union-attr]


def wait_for_clock_tick(sysdb: SystemDatabase) -> None:
    """Versions are ordered by the database clock in ms: let it move on (a poll with a deadline)."""
    start = sysdb.now_ms()
    wait_for(lambda: sysdb.now_ms() > start, timeout=5, what="the database clock to move")


def test_a_failure_before_commit_rolls_back_tasks_and_cursor(sysdb: SystemDatabase) -> None:
    sysdb.schedules_upsert(SchedulesUpsert((write(),), T0))

    def crash() -> None:
        raise ConnectionError("killed mid-fire")

    with pytest.raises(ConnectionError):
        sysdb.schedule_fire(ScheduleFire("s", (task("lost"),), FireCursor(None, T0, T1), before_commit=crash))
    assert sysdb.task_get("lost") is None
    assert sysdb.schedules_list(ListSchedulesParams(name="s"))[0].last_fired_at is None
    assert sysdb.schedule_fire(fire("s", ["lost"], None, T0, T1)).inserted == ["lost"]


def test_racing_fires_from_many_threads_fire_once(database_url: str, sysdb: SystemDatabase) -> None:
    from pgtasks.sysdb import open_system_database

    sysdb.schedules_upsert(SchedulesUpsert((write(),), T0))
    results = []
    barrier = threading.Barrier(6)

    def racer(n: int) -> None:
        db = open_system_database(database_url)
        barrier.wait()
        results.append(db.schedule_fire(fire("s", [f"r-{n}", "shared"], None, T0, T1)))
        db.close()

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    winners = [r for r in results if r.fired]
    assert len(results) == 6 and len(winners) == 1
    assert sorted(winners[0].inserted)[1] == "shared"
    assert sum(sysdb.task_get(f"r-{n}") is not None for n in range(6)) == 1
