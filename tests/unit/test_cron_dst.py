"""The daylight-saving rules, zone by zone, with an injectable clock.

Rule (docs/scheduling.md): a local time that does not exist fires once at the first instant
after the gap (the transition); a local time that happens twice fires once, at its first
occurrence, unless the hour field is ``*`` (then both passes fire, following elapsed time).
Fire instants strictly increase and never repeat.
"""

from __future__ import annotations

import datetime as dt
import itertools
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtasks.scheduler import ManualClock, define_schedule
from pgtasks.scheduler.planner import plan_fires
from pgtasks.scheduler.timing import CronTiming, due_between
from tests.support.schedules import fired, stored

UTC = dt.timezone.utc
ZONES = ("America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Apia")


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires(expr: str, zone: str, start: str, end: str) -> list[str]:
    found = due_between(CronTiming.parse(expr, zone), at(start), at(end), 100_000)
    return [f.strftime("%Y-%m-%dT%H:%M:%SZ") for f in found]


# (zone, cron, window start, window end, expected UTC fires): each row is one transition.
TABLE = [
    # New York, spring forward 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z): 02:30 does not
    # exist and fires at 03:00 EDT.
    ("America/New_York", "30 2 * * *", "2026-03-07T00:00", "2026-03-10T00:00",
     ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
    # New York, fall back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice, fires at the
    # first (EDT, 05:30Z) only.
    ("America/New_York", "30 1 * * *", "2026-10-31T00:00", "2026-11-03T00:00",
     ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
    # ...but an every-30-minutes schedule (hour '*') keeps firing through both passes.
    ("America/New_York", "*/30 * * * *", "2026-11-01T04:45", "2026-11-01T07:15",
     ["2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z",
      "2026-11-01T07:00:00Z"]),
    # London, 2026-03-29 01:00 GMT -> 02:00 BST: 01:30 fires at the transition (01:00Z).
    ("Europe/London", "30 1 * * *", "2026-03-27T12:00", "2026-03-31T00:00",
     ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
    # London, 2026-10-25 02:00 BST -> 01:00 GMT: 01:30 fires once, in BST.
    ("Europe/London", "30 1 * * *", "2026-10-23T12:00", "2026-10-27T00:00",
     ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
    # Lord Howe moves by 30 minutes. 2026-10-04 02:00 -> 02:30 (+10:30 -> +11): 02:15 does
    # not exist and fires at 02:30 (15:30Z).
    ("Australia/Lord_Howe", "15 2 * * *", "2026-10-02T12:00", "2026-10-05T00:00",
     ["2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]),
    # Lord Howe, 2026-04-05 02:00 -> 01:30 (+11 -> +10:30): 01:45 happens twice, fires once.
    ("Australia/Lord_Howe", "45 1 * * *", "2026-04-03T00:00", "2026-04-06T00:00",
     ["2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"]),
    # Kolkata (+05:30, no daylight saving): 09:00 is 03:30Z every day.
    ("Asia/Kolkata", "0 9 * * *", "2026-03-07T00:00", "2026-03-10T00:00",
     ["2026-03-07T03:30:00Z", "2026-03-08T03:30:00Z", "2026-03-09T03:30:00Z"]),
    # Samoa skipped 2011-12-30 (23:59:59 on the 29th at -10 was followed by 00:00 on the 31st
    # at +14): the 09:00 of the missing day fires at the transition, 00:00 on the 31st.
    ("Pacific/Apia", "0 9 * * *", "2011-12-28T00:00", "2012-01-01T00:00",
     ["2011-12-28T19:00:00Z", "2011-12-29T19:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T19:00:00Z",
      "2011-12-31T19:00:00Z"]),
    # ...and an hourly schedule runs on, one hour of elapsed time apart, across the missing day.
    ("Pacific/Apia", "0 * * * *", "2011-12-30T07:30", "2011-12-30T11:30",
     ["2011-12-30T08:00:00Z", "2011-12-30T09:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T11:00:00Z"]),
]  # fmt: skip


@pytest.mark.parametrize(("zone", "cron", "start", "end", "expected"), TABLE)
def test_dst_table(zone: str, cron: str, start: str, end: str, expected: list[str]) -> None:
    assert fires(cron, zone, start, end) == expected


@pytest.mark.parametrize(("zone", "cron", "start", "end", "expected"), TABLE)
def test_a_beat_stepping_a_manual_clock_fires_the_table_exactly(
    zone: str, cron: str, start: str, end: str, expected: list[str]
) -> None:
    """The planner driven by an injected clock, one step of 7 minutes at a time (within the
    grace: nothing counts as missed), fires the same instants, each once."""
    clock = ManualClock(at(start))
    schedule = stored(define_schedule("dst", "t", cron=cron, timezone=zone), active_since=at(start))
    seen: list[dt.datetime] = []
    while clock.now() < at(end):
        clock.advance(7 * 60)
        due = plan_fires(schedule, min(clock.now(), at(end)), grace=10 * 60)
        if due:
            seen += due
            schedule = fired(schedule, due[-1])
    assert [s.strftime("%Y-%m-%dT%H:%M:%SZ") for s in seen] == expected


@pytest.mark.parametrize("zone", ZONES)
def test_half_hours_follow_elapsed_time_through_every_transition_of_a_year(zone: str) -> None:
    """With hour '*' and offsets in whole half hours, the local half hours are exactly the UTC
    half hours: every one fires, once, across every gap and fold of the year."""
    year = "2011" if zone == "Pacific/Apia" else "2026"
    got = due_between(
        CronTiming.parse("*/30 * * * *", zone), at(f"{year}-01-01T00:00"), at(f"{year}-12-31T23:59"), 10**6
    )
    assert len(got) == 365 * 48 - 1
    assert all(b - a == dt.timedelta(minutes=30) for a, b in itertools.pairwise(got))


@pytest.mark.parametrize("zone", ZONES)
def test_a_daily_time_fires_once_per_local_day_and_instants_strictly_increase(zone: str) -> None:
    year = "2011" if zone == "Pacific/Apia" else "2026"
    for cron in ("30 1 * * *", "15 2 * * *", "0 0 * * *"):
        got = due_between(
            CronTiming.parse(cron, zone), at(f"{year}-01-01T12:00"), at(f"{year}-12-31T12:00"), 10**6
        )
        assert all(a < b for a, b in itertools.pairwise(got)), (zone, cron)
        # One fire per day of the year, the skipped Samoan day included (it fires at the
        # transition); the window holds 364 whole days give or take the ends.
        assert 363 <= len(got) <= 365, (zone, cron, len(got))


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    cron=st.sampled_from(["*/7 * * * *", "30 1,2 * * *", "0 */3 * * *", "45 * * * *", "*/20 30 1 * * *"]),
    start=st.datetimes(min_value=dt.datetime(2005, 1, 1), max_value=dt.datetime(2035, 1, 1)),
)
def test_fire_instants_strictly_increase_and_match_the_expression(
    zone: str, cron: str, start: dt.datetime
) -> None:
    timing = CronTiming.parse(cron, zone)
    begin = start.replace(tzinfo=UTC)
    got = due_between(timing, begin, begin + dt.timedelta(days=3), 2000)
    assert got and got[0] > begin
    assert all(a < b for a, b in itertools.pairwise(got))
    # Each fire is a local time the expression matches, except the fires of skipped local
    # times, which happen at the transition itself (the offset changes at that instant).
    tz = ZoneInfo(zone)
    six = len(cron.split()) == 6
    for instant in got:
        local = instant.astimezone(tz)
        if not croniter.match(cron, local.replace(tzinfo=None), second_at_beginning=six):
            before = (instant - dt.timedelta(seconds=1)).astimezone(tz).utcoffset()
            assert before != local.utcoffset(), (zone, cron, instant)
    # Resuming from any fire gives the same continuation (no state beyond the cursor).
    middle = got[len(got) // 2]
    assert due_between(timing, middle, got[-1], 2000) == [g for g in got if g > middle]


@pytest.mark.parametrize("hours", ["*", "0-23", "*/1", "0-11,12-23"])
def test_an_hour_field_covering_every_hour_follows_elapsed_time_through_a_fold(hours: str) -> None:
    """New York falls back on 2026-11-01: 01:00-02:00 local happens twice. Whatever spelling
    of 'every hour' is used, :30 fires in both passes; a partial hour field fires once."""
    both = fires(f"30 {hours} * * *", "America/New_York", "2026-11-01T05:00", "2026-11-01T07:00")
    assert both == ["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"]
    once = fires("30 1-23 * * *", "America/New_York", "2026-11-01T05:00", "2026-11-01T07:00")
    assert once == ["2026-11-01T05:30:00Z"]
