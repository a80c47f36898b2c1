"""Conformance of the system database, on PostgreSQL and SQLite: the life of one schedule
through every schedule method (the detailed schedule suite is
tests/integration/test_schedules_store.py)."""

from __future__ import annotations

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.schedule_records import (
    FireCursor,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleStatus,
    ScheduleStatusChange,
    SchedulesUpsert,
    ScheduleWrite,
)
from tests.integration.sysdb.support import task

T0, T1, T2 = "2026-11-22T10:00:00Z", "2026-11-22T10:05:00Z", "2026-11-22T10:10:00Z"


def test_a_schedule_is_stored_fired_once_per_cursor_paused_and_deleted(sysdb: SystemDatabase) -> None:
    tick = ScheduleWrite(name="tick", task_name="proj.t", schedule="*/5 * * * *")
    [stored] = sysdb.schedules_upsert(SchedulesUpsert((tick,), T0)).stored
    assert (stored.name, stored.status, stored.cursor) == ("tick", ScheduleStatus.ACTIVE, T0)
    fire = ScheduleFire("tick", (task("sched-tick-1"),), FireCursor(None, T0, T1), pin_latest_version=False)
    assert sysdb.schedule_fire(fire).fired
    assert not sysdb.schedule_fire(fire).fired  # the cursor moved: a second scheduler fires nothing
    fired = sysdb.task_get("sched-tick-1")
    assert fired is not None and fired.status is Status.ENQUEUED
    paused = sysdb.schedule_set_status(ScheduleStatusChange("tick", ScheduleStatus.PAUSED, T2))
    assert paused is not None and paused.status is ScheduleStatus.PAUSED and paused.last_fired_at == T1
    assert sysdb.schedule_set_status(ScheduleStatusChange("none", ScheduleStatus.PAUSED, T2)) is None
    assert [s.name for s in sysdb.schedules_list(ListSchedulesParams((ScheduleStatus.PAUSED,)))] == ["tick"]
    assert sysdb.schedules_list(ListSchedulesParams((ScheduleStatus.ACTIVE,))) == []
    assert sysdb.schedule_delete("tick") and not sysdb.schedule_delete("tick")
    assert sysdb.schedules_list(ListSchedulesParams(name="tick")) == []
    assert sysdb.task_get("sched-tick-1") is not None  # its fired task stays
