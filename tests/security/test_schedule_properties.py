"""Property tests of schedule definitions through ``app.schedule``: random cron strings and
time zone names are accepted, or refused with an error naming the bad field (or the zone);
every accepted schedule produces strictly increasing fire times, across daylight-saving
changes too. Runs on SQLite (the definition API stores each schedule at once)."""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pgtasks import App, ConfigurationError
from pgtasks.scheduler.cron import FIVE_FIELDS, SIX_FIELDS
from pgtasks.scheduler.definitions import decode_schedule
from tests.security.support import INJECTIONS, PROPERTY

UTC = dt.timezone.utc
TASK = "sec.periodic"
FIRES = 40
ZONES = sorted(zoneinfo.available_timezones())
DST_ZONES = (
    "Europe/Paris",
    "America/New_York",
    "America/Sao_Paulo",
    "Australia/Lord_Howe",  # a 30-minute shift
    "Asia/Tehran",
    "Pacific/Apia",  # skipped a whole day in 2011
    "Antarctica/Troll",  # a 2-hour shift
    "America/St_Johns",
)


# -- cron fields: valid by construction, or invalid by construction -------------------------
def numeric(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high)
    ranges = st.integers(low, high - 1).flatmap(lambda a: st.tuples(st.just(a), st.integers(a + 1, high)))
    return st.one_of(
        st.just("*"),
        number.map(str),
        ranges.map(lambda p: f"{p[0]}-{p[1]}"),
        st.integers(1, high - low).map(lambda n: f"*/{n}"),
        st.lists(number, min_size=2, max_size=4, unique=True).map(lambda xs: ",".join(map(str, xs))),
        st.tuples(ranges, st.integers(1, high - low)).map(lambda t: f"{t[0][0]}-{t[0][1]}/{t[1]}"),
    )


MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
VALID = {
    "second": numeric(0, 59),
    "minute": numeric(0, 59),
    "hour": numeric(0, 23),
    "day_of_month": st.one_of(numeric(1, 31), st.just("L")),
    "month": st.one_of(numeric(1, 12), st.sampled_from(MONTHS)),
    "day_of_week": st.one_of(numeric(0, 7), st.sampled_from([*DAYS, "mon-fri"])),
}
GARBAGE = ["x", "*/0", "1-", "a'b", "é", "--", "*/", "1,,2", "-1", "';DROP", '"', "%s", "\\"]
INVALID = {
    "second": st.sampled_from([*GARBAGE, "60", "0-60", "61-62"]),
    "minute": st.sampled_from([*GARBAGE, "60", "0-60"]),
    "hour": st.sampled_from([*GARBAGE, "24", "25", "0-24"]),
    "day_of_month": st.sampled_from([*GARBAGE, "0", "32", "LW"]),
    "month": st.sampled_from([*GARBAGE, "0", "13", "13-14"]),
    "day_of_week": st.sampled_from([*GARBAGE, "8", "9", "1#6", "5L"]),
}


@st.composite
def cron_fields(draw: st.DrawFn) -> tuple[str, str | None]:
    """A cron string and the first field made invalid (None if every field is valid)."""
    names = draw(st.sampled_from([FIVE_FIELDS, SIX_FIELDS]))
    bad = draw(st.sets(st.sampled_from(names), max_size=2))
    parts = [draw(INVALID[n] if n in bad else VALID[n]) for n in names]
    spaces = draw(
        st.lists(st.sampled_from([" ", "  ", "\t"]), min_size=len(parts) - 1, max_size=len(parts) - 1)
    )
    text = parts[0] + "".join(s + p for s, p in zip(spaces, parts[1:], strict=True))
    first_bad = next((n for n in names if n in bad), None)
    return text, first_bad


starts = st.datetimes(
    min_value=dt.datetime(1975, 1, 1), max_value=dt.datetime(2090, 1, 1), timezones=st.just(UTC)
)


def check_fire_times(app: App, name: str, start: dt.datetime) -> None:
    """The stored schedule fires at whole-second UTC instants after ``start``, strictly
    increasing (so no fire time repeats, whatever the zone does)."""
    timing = decode_schedule(app.get_schedule(name)).timing
    previous = start
    for count, instant in enumerate(timing.instants_after(start)):
        if count == FIRES:
            break
        assert instant.tzinfo is not None and instant.utcoffset() == dt.timedelta(0)
        assert instant.microsecond == 0
        assert instant > previous, f"{instant} does not come after {previous}"
        previous = instant


# -- properties ----------------------------------------------------------------------------
@PROPERTY
@given(cron=cron_fields(), start=starts)
def test_cron_fields_are_accepted_or_the_bad_field_is_named(
    sqlite_app: App, cron: tuple[str, str | None], start: dt.datetime
) -> None:
    text, first_bad = cron
    try:
        sqlite_app.schedule("prop", TASK, text)
    except ConfigurationError as exc:
        message = str(exc)
        if first_bad is not None:
            assert f"field {first_bad} " in message, message
        else:  # every field is valid alone; together they may name no real date (Feb 30)
            assert "never matches" in message, message
        return
    assert first_bad is None, f"{text!r} was accepted though its {first_bad} field is invalid"
    check_fire_times(sqlite_app, "prop", start)


@PROPERTY
@given(
    text=st.one_of(
        st.text(max_size=40),
        st.sampled_from(INJECTIONS),
        st.sampled_from(["@daily", "@Hourly", "@bogus", "@"]),
    )
)
def test_any_cron_text_is_accepted_or_refused_as_configuration(sqlite_app: App, text: str) -> None:
    try:
        sqlite_app.schedule("prop", TASK, text)
    except ConfigurationError as exc:
        message = str(exc)
        assert "schedule 'prop'" in message and ("cron expression" in message or "field" in message), message
        return
    check_fire_times(sqlite_app, "prop", dt.datetime(2024, 1, 1, tzinfo=UTC))


@PROPERTY
@given(
    zone=st.one_of(
        st.sampled_from(ZONES),
        st.text(min_size=1, max_size=30),  # "" means the app's zone (see Scheduling.schedule)
        st.sampled_from(INJECTIONS),
        st.sampled_from(
            [
                "../../etc/passwd",
                "/etc/localtime",
                "Europe/../Europe/Paris",
                "UTC\x00",
                "europe/paris",
                " UTC",
            ]
        ),
    ),
    cron=st.sampled_from(["0 * * * *", "30 2 * * *", "*/20 1-3 * * *", "0 0 1 * *", "15 3 * * sun"]),
    start=starts,
)
def test_zone_names_are_accepted_or_refused_by_name(
    sqlite_app: App, zone: str, cron: str, start: dt.datetime
) -> None:
    try:
        sqlite_app.schedule("prop", TASK, cron, timezone=zone)
    except ConfigurationError as exc:
        assert "timezone" in str(exc) and repr(zone) in str(exc), str(exc)
        assert zone not in ZONES, f"the IANA zone {zone!r} was refused"
        assert all(s.timezone != zone for s in sqlite_app.schedules_list())
        return
    assert zoneinfo.ZoneInfo(zone).key == zone
    assert sqlite_app.get_schedule("prop").timezone == zone
    check_fire_times(sqlite_app, "prop", start)


@PROPERTY
@given(
    zone=st.sampled_from(DST_ZONES),
    cron=st.one_of(
        cron_fields().filter(lambda c: c[1] is None).map(lambda c: c[0]),
        st.sampled_from(["30 2 * * *", "0,30 * * * *", "*/7 0-4 * * *", "59 23 * * *"]),
    ),
    year=st.integers(1990, 2040),
    month=st.sampled_from([3, 4, 9, 10, 11, 12]),
    day=st.integers(1, 28),
)
def test_fire_times_strictly_increase_across_daylight_saving_changes(
    sqlite_app: App, zone: str, cron: str, year: int, month: int, day: int
) -> None:
    try:
        sqlite_app.schedule("prop", TASK, cron, timezone=zone)
    except ConfigurationError as exc:
        assert "never matches" in str(exc)
        return
    check_fire_times(sqlite_app, "prop", dt.datetime(year, month, day, tzinfo=UTC))


def test_zone_names_cannot_reach_files_outside_the_zone_database(sqlite_app: App) -> None:
    for zone in ("../../etc/passwd", "/etc/localtime", "Europe/../Europe/Paris", "./UTC", "UTC/", "UTC\x00"):
        with pytest.raises(ConfigurationError, match=re.escape(f"unknown timezone {zone!r}")):
            sqlite_app.schedule("prop", TASK, "* * * * *", timezone=zone)
    assert sqlite_app.schedules_list() == []
