"""The backfill rules and clock jumps, with an injectable clock and no database."""

from __future__ import annotations

import datetime as dt

from pgtasks.scheduler import ManualClock, define_schedule
from pgtasks.scheduler.definitions import StoredSchedule
from pgtasks.scheduler.planner import next_fire, plan_fires
from tests.support.schedules import fired, stored

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def minutes(n: float) -> dt.timedelta:
    return dt.timedelta(minutes=n)


def every_minute(backfill: bool, window: int = 86_400) -> StoredSchedule:
    definition = define_schedule(
        "m", "t", cron="* * * * *", automatic_backfill=backfill, backfill_window=window
    )
    return stored(definition, active_since=T0 - minutes(5), last_fired_at=T0)


def test_down_for_an_hour_with_backfill_fires_every_missed_minute_oldest_first() -> None:
    schedule = every_minute(backfill=True)
    due = plan_fires(schedule, T0 + minutes(60) + dt.timedelta(seconds=20))
    assert due == [T0 + minutes(n) for n in range(1, 61)]


def test_down_for_an_hour_without_backfill_fires_the_most_recent_once() -> None:
    schedule = every_minute(backfill=False)
    assert plan_fires(schedule, T0 + minutes(60) + dt.timedelta(seconds=20)) == [T0 + minutes(60)]


def test_backfill_is_bounded_by_the_window_and_by_the_batch() -> None:
    schedule = every_minute(backfill=True, window=30 * 60)
    now = T0 + minutes(60)
    assert plan_fires(schedule, now) == [T0 + minutes(n) for n in range(31, 61)]
    first = plan_fires(every_minute(backfill=True), now, limit=25)
    assert first == [T0 + minutes(n) for n in range(1, 26)]
    rest = plan_fires(fired(every_minute(backfill=True), first[-1]), now, limit=100)
    assert rest == [T0 + minutes(n) for n in range(26, 61)]


def test_a_late_tick_within_the_grace_fires_everything_even_without_backfill() -> None:
    definition = define_schedule("s", "t", cron="* * * * * *")
    schedule = stored(definition, active_since=T0)
    assert plan_fires(schedule, T0 + dt.timedelta(seconds=3.5), grace=5) == [
        T0 + dt.timedelta(seconds=n) for n in (1, 2, 3)
    ]
    assert plan_fires(schedule, T0 + dt.timedelta(seconds=9), grace=5) == [T0 + dt.timedelta(seconds=9)]


def test_clock_jumps() -> None:
    clock = ManualClock(T0)
    schedule = every_minute(backfill=False)
    # Forward by a day: the backfill rule applies (most recent only, here).
    clock.advance(86_400)
    due = plan_fires(schedule, clock.now())
    assert due == [T0 + dt.timedelta(days=1)]
    schedule = fired(schedule, due[-1])
    # Back by two hours: nothing is due until the clock passes the cursor again.
    clock.set(T0 + dt.timedelta(days=1) - minutes(120))
    for _ in range(120):
        assert plan_fires(schedule, clock.now()) == []
        clock.advance(60)
    assert next_fire(schedule, clock.now()) == T0 + dt.timedelta(days=1) + minutes(1)
    clock.advance(60)
    assert plan_fires(schedule, clock.now()) == [T0 + dt.timedelta(days=1) + minutes(1)]


def test_a_new_schedule_starts_after_it_became_active() -> None:
    definition = define_schedule("n", "t", cron="0 * * * *", automatic_backfill=True)
    schedule = stored(definition, active_since=T0 + minutes(30))
    assert plan_fires(schedule, T0 + minutes(59)) == []
    assert next_fire(schedule, T0 + minutes(59)) == T0 + minutes(60)
    assert plan_fires(schedule, T0 + minutes(60)) == [T0 + minutes(60)]
