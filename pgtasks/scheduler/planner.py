"""Which due times to fire now: the backfill rules, as a pure function of the stored schedule
and the clock.

The cursor of a schedule is the later of ``last_fired_at`` and ``active_since``: due times at
or before it are settled. The due times after the cursor and at or before now are pending:

- If the oldest pending one is at most ``grace`` seconds old, the scheduler was merely late
  (a slow tick): all of them fire, oldest first.
- Otherwise the schedule missed them (the schedulers were down, or the clock jumped forward).
  With ``automatic_backfill`` every pending due time within the schedule's backfill window
  (``now - window``) fires, oldest first; older ones are dropped. Without it only the most
  recent pending due time fires, once.

A clock that jumps backward leaves now before the cursor: nothing is pending until the clock
passes the cursor again, so nothing fires twice.
"""

from __future__ import annotations

import datetime as dt

from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.definitions import StoredSchedule, parse_due
from pgtasks.scheduler.timing import due_between, floor_second, latest_due, next_due

DEFAULT_GRACE_SECONDS = 5.0


def cursor_of(schedule: StoredSchedule, now: dt.datetime, grace: float) -> dt.datetime:
    """The settled point of a schedule (a row without one starts ``grace`` before now)."""
    cursor = schedule.record.cursor
    if cursor is None:
        return floor_second(now - dt.timedelta(seconds=grace))
    try:
        return parse_due(cursor)
    except ValueError:
        raise ConfigurationError(
            f"schedule {schedule.record.name!r}: stored last_fired_at/active_since {cursor!r} is not "
            "a due time such as 2026-11-22T10:15:00Z"
        ) from None


def plan_fires(
    schedule: StoredSchedule, now: dt.datetime, grace: float = DEFAULT_GRACE_SECONDS, limit: int = 500
) -> list[dt.datetime]:
    """The due times to fire at ``now``, oldest first, at most ``limit`` (the rest next time)."""
    cursor = cursor_of(schedule, now, grace)
    now = floor_second(now)
    if now <= cursor:
        return []
    oldest = next_due(schedule.timing, cursor)
    if oldest > now:
        return []
    if oldest >= now - dt.timedelta(seconds=grace):
        return due_between(schedule.timing, cursor, now, limit)
    if schedule.record.automatic_backfill:
        window_start = now - dt.timedelta(seconds=schedule.record.backfill_window_seconds)
        return due_between(schedule.timing, max(cursor, window_start), now, limit)
    latest = latest_due(schedule.timing, cursor, now)
    return [latest] if latest is not None else []


def next_fire(
    schedule: StoredSchedule, now: dt.datetime, grace: float = DEFAULT_GRACE_SECONDS
) -> dt.datetime:
    """When the schedule next has something to fire, seen from ``now``."""
    return next_due(schedule.timing, max(cursor_of(schedule, now, grace), floor_second(now)))
