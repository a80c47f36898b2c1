"""Cron and interval schedules stored in the database, fired exactly once per due time by any number of
beats (``pgtasks beat``, or ``pgtasks worker -B``). See docs/scheduling.md."""

from __future__ import annotations

from pgtasks.scheduler.beat import Beat, BeatSettings, TickReport
from pgtasks.scheduler.clock import Clock, DatabaseClock, ManualClock, SystemClock
from pgtasks.scheduler.definitions import ScheduleDefinition, define_schedule, fire_task_id, format_due

__all__ = [
    "Beat",
    "BeatSettings",
    "Clock",
    "DatabaseClock",
    "ManualClock",
    "ScheduleDefinition",
    "SystemClock",
    "TickReport",
    "define_schedule",
    "fire_task_id",
    "format_due",
]
