"""Cron expressions, zones, intervals and Celery's schedule classes: validation and conversion."""

from __future__ import annotations

import datetime as dt
import sys

import pytest

from pgtasks.compat.bridge.beat_schedule import definitions_from_config
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.compat.celery.schedules import crontab, schedule, solar
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler import define_schedule, fire_task_id, format_due
from pgtasks.scheduler.cron import parse_cron
from pgtasks.scheduler.definitions import decode_schedule, parse_due
from pgtasks.scheduler.solar import SolarTiming
from pgtasks.scheduler.timing import CronTiming, IntervalTiming, ceil_second, due_between, next_due
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleStatus

UTC = dt.timezone.utc


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("61 * * * *", "field minute ('61')"),
        ("* 24 * * *", "field hour ('24')"),
        ("* * 32 * *", "field day_of_month ('32')"),
        ("* * * 13 *", "field month ('13')"),
        ("* * * * funday", "field day_of_week ('funday')"),
        ("60 * * * * *", "field second ('60')"),
        ("*/0 * * * *", "field minute ('*/0')"),
        ("H * * * *", "field minute ('H') uses a hashed value"),
    ],
)
def test_an_invalid_field_is_named(text: str, field: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_cron(text)
    assert field in str(raised.value)


def test_field_count_aliases_and_never_matching_expressions() -> None:
    with pytest.raises(ConfigurationError, match="has 4 fields; expected 5"):
        parse_cron("* * * *")
    with pytest.raises(ConfigurationError, match="has 7 fields"):
        parse_cron("* * * * * * 2026")
    with pytest.raises(ConfigurationError, match="unknown alias"):
        parse_cron("@fortnightly")
    with pytest.raises(ConfigurationError, match="non-empty string"):
        parse_cron("  ")
    assert parse_cron("@hourly").text == "0 * * * *"
    assert parse_cron("  */5   *  * * *").text == "*/5 * * * *"
    with pytest.raises(ConfigurationError, match="never matches"):
        CronTiming.parse("0 0 30 2 *")


def test_six_fields_put_seconds_first() -> None:
    timing = CronTiming.parse("*/20 * * * * *")
    assert due_between(timing, at("2026-01-01T00:00:00"), at("2026-01-01T00:01:00"), 10) == [
        at("2026-01-01T00:00:20"),
        at("2026-01-01T00:00:40"),
        at("2026-01-01T00:01:00"),
    ]


def test_unknown_time_zones_are_rejected_when_defined() -> None:
    with pytest.raises(ConfigurationError, match="schedule 'x': unknown timezone 'Mars/Olympus'"):
        define_schedule("x", "t", cron="* * * * *", timezone="Mars/Olympus")
    with pytest.raises(ConfigurationError, match=r"unknown timezone '\.\./etc/passwd'"):
        define_schedule("x", "t", cron="* * * * *", timezone="../etc/passwd")


def test_schedule_definitions_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="exactly one of cron=, every= and solar="):
        define_schedule("x", "t")
    with pytest.raises(ConfigurationError, match="exactly one of cron=, every= and solar="):
        define_schedule("x", "t", cron="* * * * *", every=5)
    with pytest.raises(ConfigurationError, match="whole number of seconds"):
        define_schedule("x", "t", every=0.5)
    with pytest.raises(ConfigurationError, match="JSON values"):
        define_schedule("x", "t", every=5, args=(object(),))
    with pytest.raises(ConfigurationError, match="invalid queue name"):
        define_schedule("x", "t", every=5, queue="no spaces")
    with pytest.raises(ConfigurationError, match="control characters"):
        define_schedule("a\nb", "t", every=5)
    with pytest.raises(ConfigurationError, match="backfill_window must be between"):
        define_schedule("x", "t", every=5, backfill_window=0)
    with pytest.raises(ConfigurationError, match="automatic_backfill must be True or False"):
        define_schedule("x", "t", every=5, automatic_backfill="yes")  # type: ignore[arg-type]


def test_fire_task_ids_use_canonical_utc_due_times() -> None:
    paris = dt.datetime(2026, 11, 22, 11, 15, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert format_due(paris) == "2026-11-22T10:15:00Z"
    assert fire_task_id("report", paris) == "sched-report-2026-11-22T10:15:00Z"
    assert parse_due("2026-11-22T10:15:00Z") == at("2026-11-22T10:15:00")


def test_interval_schedules_fire_at_multiples_of_the_period_since_the_epoch() -> None:
    timing = IntervalTiming(30)
    assert due_between(timing, at("2026-01-01T00:00:10"), at("2026-01-01T00:01:30"), 10) == [
        at("2026-01-01T00:00:30"),
        at("2026-01-01T00:01:00"),
        at("2026-01-01T00:01:30"),
    ]


def test_anchored_intervals_fire_every_period_after_their_anchor() -> None:
    # django-celery-beat's interval rows: last_run_at + k * every, never early (a fraction of a
    # second moves the anchor up), none before the row's start_time
    anchored = IntervalTiming.anchored(30, at("2026-01-01T00:00:07.250000"))
    assert (anchored.offset, anchored.describe()) == (8, "every 30s +8s")
    assert due_between(anchored, at("2026-01-01T00:00:08"), at("2026-01-01T00:01:10"), 10) == [
        at("2026-01-01T00:00:38"),
        at("2026-01-01T00:01:08"),
    ]
    start = at("2026-01-01T00:05:00")
    starting = IntervalTiming.anchored(30, start, start)
    assert starting.describe() == "every 30s from 2026-01-01T00:05:00Z"
    assert due_between(starting, at("2026-01-01T00:00:00"), at("2026-01-01T00:06:00"), 10) == [
        start,
        at("2026-01-01T00:05:30"),
        at("2026-01-01T00:06:00"),
    ]
    for timing in (
        IntervalTiming(30),
        anchored,
        starting,
        IntervalTiming.anchored(30, start, at("2026-01-02T00:00:01")),
    ):
        assert IntervalTiming.parse(30, timing.describe()) == timing  # as stored and read back
    with pytest.raises(ConfigurationError, match="stored interval 'every 30s' is not 'every 20s"):
        IntervalTiming.parse(20, "every 30s")


def test_celery_crontab_converts_to_cron_text() -> None:
    assert crontab().cron_expression == "* * * * *"
    assert crontab(minute=0, hour="9-17", day_of_week="mon-fri").cron_expression == "0 9-17 * * mon-fri"
    assert crontab(minute={30, 0}, hour=[9, 17]).cron_expression == "0,30 9,17 * * *"
    assert crontab(0, 0, day_of_month="1", month_of_year="5").cron_expression == "0 0 1 5 *"
    with pytest.raises(ConfigurationError, match="field minute"):
        crontab(minute=75)
    with pytest.raises(ConfigurationError, match="field month_of_year"):
        crontab(month_of_year="13")
    with pytest.raises(ConfigurationError, match="field day_of_week"):
        crontab(day_of_week="someday")


def test_celery_crontab_with_both_day_fields_needs_both() -> None:
    first_monday = crontab(0, 0, day_of_month="1-7", day_of_week="mon")
    assert first_monday.day_and
    fires = due_between(first_monday.timing("UTC"), at("2026-01-01T00:00:00"), at("2026-04-01T00:00:00"), 10)
    assert fires == [at("2026-01-05T00:00:00"), at("2026-02-02T00:00:00"), at("2026-03-02T00:00:00")]
    either = CronTiming.parse("0 0 1-7 * mon")  # plain cron: either day field
    assert len(due_between(either, at("2026-01-01T00:00:00"), at("2026-02-01T00:00:00"), 100)) == 10


def test_celery_schedule() -> None:
    every = schedule(dt.timedelta(minutes=5))
    assert every.seconds == 300 and every == schedule(300.0) and repr(every) == "<freq: 5.00 minutes>"
    quarter = schedule(0.25)  # as Celery's, kept as given; beat fires it every whole second
    assert quarter.seconds == 0.25 and quarter.fire_seconds == 1
    with pytest.raises(ConfigurationError, match="whole number of seconds"):
        schedule(float("nan"))


# Celery 5.6's solar(event, lat, lon) with ephem 4.2.1: the next two events after 2026-03-20
# 00:00 UTC (remaining_estimate), captured from the real Celery; pgtasks fires at the next
# whole second.
CELERY_SOLAR_EVENTS = [
    ("sunrise", 51.5074, -0.1278, "2026-03-20T06:03:23.672278", "2026-03-21T06:01:06.919074"),
    ("solar_noon", 0, -166.61, "2026-03-20T23:13:44.323802", "2026-03-21T23:13:26.547709"),
    ("sunset", -33.87, 151.21, "2026-03-20T08:06:56.727924", "2026-03-21T08:05:35.336795"),
    ("dawn_civil", 51.5074, -0.1278, "2026-03-20T05:30:08.869745", "2026-03-21T05:27:50.377536"),
    ("dusk_astronomical", 40.7, -74.0, "2026-03-20T00:38:54.334668", "2026-03-21T00:40:06.010295"),
    ("sunrise", 78.22, 15.65, "2026-03-20T04:51:44.711796", "2026-03-21T04:43:53.426596"),
]


@pytest.mark.parametrize(("event", "lat", "lon", "first", "second"), CELERY_SOLAR_EVENTS)
def test_solar_schedules_fire_at_celerys_events(
    event: str, lat: float, lon: float, first: str, second: str
) -> None:
    timing = solar(event, lat, lon).timing()
    fires = due_between(timing, at("2026-03-20T00:00:00"), at("2026-03-22T00:00:00"), 10)
    assert fires == [ceil_second(at(first)), ceil_second(at(second))]
    assert SolarTiming.parse(timing.describe()) == timing  # as stored and read back


def test_a_solar_event_that_does_not_happen_for_months_is_found() -> None:
    # Longyearbyen's polar night: Celery's next sunrise after 2026-12-01 is 2027-02-16T10:20:48.87
    polar_night = SolarTiming.define("sunrise", 78.22, 15.65)
    assert next_due(polar_night, at("2026-12-01T00:00:00")) == at("2027-02-16T10:20:49")


def test_bad_solar_schedules_are_refused_as_celery_refuses_them() -> None:
    assert solar("sunset", 10, 20) == solar("sunset", 10, 20) != solar("sunrise", 10, 20)
    assert repr(solar("sunset", 10, 20)) == "<solar: sunset at latitude 10, longitude: 20>"
    with pytest.raises(ValueError, match="solar event 'noon' is not one of dawn_astronomical, "):
        solar("noon", 10, 20)
    with pytest.raises(ValueError, match="solar latitude must be a number from -90 to 90, not 91"):
        solar("sunset", 91, 20)
    with pytest.raises(ValueError, match="solar longitude must be a number from -180 to 180, not -181"):
        solar("sunset", 10, -181)
    with pytest.raises(ConfigurationError, match="stored solar schedule 'solar sunset x 1' has no numbers"):
        SolarTiming.parse("solar sunset x 1")
    definition = define_schedule("dusk", "t", solar=("dusk_civil", 48.85, 2.35))
    assert definition.to_write().schedule == "solar dusk_civil 48.85 2.35"
    with pytest.raises(ConfigurationError, match="give exactly one of cron=, every= and solar="):
        define_schedule("both", "t", every=5, solar=("dusk_civil", 48.85, 2.35))


def test_without_ephem_solar_schedules_name_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ephem", None)  # what `import ephem` meets when it is absent
    with pytest.raises(
        ImproperlyConfigured, match="solar schedules need the ephem package, as in Celery: pip install ephem"
    ):
        solar("sunrise", -33.87, 151.21)
    with pytest.raises(ConfigurationError, match="schedule 'dawn': solar schedules need the ephem package"):
        define_schedule("dawn", "t", solar=("dawn_civil", 0, 0))


def test_beat_schedule_entries_become_configured_definitions() -> None:
    config = {
        "weekday-report": {
            "task": "proj.report",
            "schedule": crontab(minute=30, hour=7, day_of_week="mon-fri"),
            "args": (1,),
            "kwargs": {"full": True},
            "options": {"queue": "reports", "priority": 5, "expires": 600, "exchange": "ignored"},
        },
        "every-10s": {"task": "proj.ping", "schedule": 10.0},
        "every-5m": {"task": "proj.ping", "schedule": dt.timedelta(minutes=5), "automatic_backfill": True},
        "cron-text": {"task": "proj.ping", "schedule": "*/2 * * * * *"},
    }
    found = {d.name: d for d in definitions_from_config(config, "Europe/Paris", "config:proj")}
    report = found["weekday-report"]
    assert isinstance(report.timing, CronTiming) and report.timing.timezone == "Europe/Paris"
    assert (report.args, report.kwargs, report.queue, report.priority, report.expires) == (
        (1,),
        {"full": True},
        "reports",
        5,
        600,
    )
    assert report.source == "config:proj"
    assert found["every-10s"].timing == IntervalTiming(10)
    assert found["every-5m"].automatic_backfill and found["every-5m"].timing == IntervalTiming(300)
    assert found["cron-text"].timing.describe() == "cron '*/2 * * * * *' Europe/Paris"
    with pytest.raises(ConfigurationError, match=r"beat_schedule\['bad'\] has no schedule"):
        definitions_from_config({"bad": {"task": "x"}}, "UTC", "config:proj")
    with pytest.raises(ConfigurationError, match=r"beat_schedule\['bad'\]: unknown keys \['shedule'\]"):
        definitions_from_config({"bad": {"task": "x", "schedule": 5, "shedule": 5}}, "UTC", "config:proj")
    with pytest.raises(ConfigurationError, match=r"beat_schedule\['bad'\]: .*field hour"):
        definitions_from_config({"bad": {"task": "x", "schedule": "0 25 * * *"}}, "UTC", "config:proj")
    for given, said in (
        ({"args": 5}, "args must be a list or tuple, not int"),
        ({"args": "ab"}, "args must be a list or tuple, not str"),
        ({"kwargs": [1]}, "kwargs must be a dict, not list"),
    ):
        with pytest.raises(ConfigurationError, match=rf"^beat_schedule\['bad'\]: {said}$"):
            definitions_from_config({"bad": {"task": "x", "schedule": 5, **given}}, "UTC", "config:proj")


def test_a_definition_round_trips_through_its_row() -> None:
    definition = define_schedule(
        "r", "proj.t", cron="0 9 * * *", timezone="Asia/Kolkata", args=[1], kwargs={"k": 2}, priority=4
    )
    written = definition.to_write()
    record = ScheduleRecord(
        schedule_id="id",
        name=written.name,
        task_name=written.task_name,
        schedule=written.schedule,
        timezone=written.timezone,
        interval_seconds=written.interval_seconds,
        day_and=written.day_and,
        context=written.context,
        options=written.options,
        queue_name=written.queue_name,
        status=ScheduleStatus.ACTIVE,
        last_fired_at=None,
        active_since="2026-01-01T00:00:00Z",
        automatic_backfill=False,
        backfill_window_seconds=written.backfill_window_seconds,
        source=written.source,
        created_at=0,
        updated_at=0,
    )
    decoded = decode_schedule(record)
    assert decoded.timing == definition.timing
    assert (decoded.args, decoded.kwargs, decoded.priority, decoded.expires) == ((1,), {"k": 2}, 4, None)


def test_schedule_names_and_zones_that_cannot_be_stored_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="lone surrogate"):
        define_schedule("bad\udc80", "t", cron="* * * * *")
    with pytest.raises(ConfigurationError, match="timezone must be an IANA zone name"):
        define_schedule("empty-zone", "t", cron="* * * * *", timezone="")
