"""Building stored schedules in memory, for tests of the planner without a database."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from pgtasks.scheduler.definitions import ScheduleDefinition, StoredSchedule, decode_schedule, format_due
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleStatus


def stored(
    definition: ScheduleDefinition, active_since: dt.datetime, last_fired_at: dt.datetime | None = None
) -> StoredSchedule:
    """The schedule as the scheduler would read it from its row."""
    row = definition.to_write()
    record = ScheduleRecord(
        schedule_id="test",
        name=row.name,
        task_name=row.task_name,
        schedule=row.schedule,
        timezone=row.timezone,
        interval_seconds=row.interval_seconds,
        day_and=row.day_and,
        context=row.context,
        options=row.options,
        queue_name=row.queue_name,
        status=ScheduleStatus.ACTIVE,
        last_fired_at=None if last_fired_at is None else format_due(last_fired_at),
        active_since=format_due(active_since),
        automatic_backfill=row.automatic_backfill,
        backfill_window_seconds=row.backfill_window_seconds,
        source=row.source,
        created_at=0,
        updated_at=0,
    )
    return decode_schedule(record)


def fired(schedule: StoredSchedule, last: dt.datetime) -> StoredSchedule:
    """The schedule after a fire moved its cursor to ``last``."""
    return replace(schedule, record=replace(schedule.record, last_fired_at=format_due(last)))
