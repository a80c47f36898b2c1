"""``is_due`` / ``remaining_estimate`` of Celery's schedules, for code that shows a
schedule's next run or drives it by hand: the figures real Celery 5 gives for the same
inputs (captured from it), in the app's time zone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from celery import Celery
from celery.schedules import crontab, schedule, solar

NOW = dt.datetime(2026, 11, 27, 12, 0, 30, tzinfo=dt.timezone.utc)


@pytest.fixture
def app(sqlite_url: str) -> Celery:
    return Celery("schedules", broker=sqlite_url, timezone="Europe/Paris")


def test_crontab_is_due_and_remaining_estimate(app: Celery) -> None:
    every_five = crontab(minute="*/5", app=app, nowfun=lambda: NOW)
    assert every_five.remaining_estimate(NOW) == dt.timedelta(minutes=4, seconds=30)
    assert every_five.is_due(NOW - dt.timedelta(minutes=6)) == (True, 270.0)
    assert every_five.is_due(NOW) == (False, 270.0)
    assert every_five.app is app and str(every_five.tz) == "Europe/Paris"
    assert every_five.to_local(NOW) == NOW  # enable_utc: as given
    assert every_five.maybe_make_aware(NOW.replace(tzinfo=None)).utcoffset() == dt.timedelta(hours=1)
    # The app's zone decides the wall clock: 09:00 Paris is 08:00 UTC in winter.
    nine = crontab(minute=0, hour=9, app=app, nowfun=lambda: NOW)
    assert nine.remaining_estimate(NOW) == dt.timedelta(hours=19, minutes=59, seconds=30)


def test_crontab_from_string() -> None:
    weekday_nine = crontab.from_string("0 9 * * mon-fri")
    assert weekday_nine == crontab(minute=0, hour=9, day_of_week="mon-fri")
    assert weekday_nine.hour == {9} and weekday_nine.day_of_week == {1, 2, 3, 4, 5}
    with pytest.raises(ValueError, match="5 fields, not 3"):
        crontab.from_string("0 9 *")


def test_interval_is_due_from_the_last_run(app: Celery) -> None:
    minutely = schedule(60, app=app, nowfun=lambda: NOW)
    assert minutely.is_due(NOW - dt.timedelta(seconds=90)) == (True, 60.0)
    assert minutely.is_due(NOW) == (False, 60.0)
    assert minutely.remaining_estimate(NOW - dt.timedelta(seconds=20)) == dt.timedelta(seconds=40)
    assert minutely.human_seconds == "1.00 minute"


def test_crontab_remaining_delta_gives_the_next_due_time_after_the_last_run(app: Celery) -> None:
    # django-celery-beat computes a row's first run after its start_time as start + delta.
    nine = crontab(minute=0, hour=9, app=app, nowfun=lambda: NOW)
    start, delta, now = nine.remaining_delta(NOW - dt.timedelta(hours=1))
    assert (start, now) == (NOW - dt.timedelta(hours=1), NOW)
    assert start + delta == dt.datetime(2026, 11, 28, 8, 0, tzinfo=dt.timezone.utc)  # 09:00 in Paris
    # Across the switch to summer time the wall clock is kept: 09:00 is then 07:00 UTC.
    start, delta, _ = nine.remaining_delta(dt.datetime(2026, 3, 28, 9, 0, tzinfo=dt.timezone.utc))
    assert start + delta == dt.datetime(2026, 3, 29, 7, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(("deadline", "due"), [(None, True), (120, True), (20, False)])
def test_crontab_is_not_due_when_its_missed_run_is_older_than_the_starting_deadline(
    app: Celery, deadline: int | None, due: bool
) -> None:
    # As Celery's beat_cron_starting_deadline: the latest missed run (12:00:00, 30 s ago).
    app.conf.beat_cron_starting_deadline = deadline
    every_five = crontab(minute="*/5", app=app, nowfun=lambda: NOW)
    for last_run in (NOW - dt.timedelta(minutes=10, seconds=30), NOW - dt.timedelta(hours=3, seconds=30)):
        assert every_five.is_due(last_run) == (due, 270.0)


def test_solar_takes_decimal_places_and_lists_its_events(app: Celery) -> None:
    # django-celery-beat's SolarSchedule keeps latitude and longitude in DecimalFields.
    sunrise = solar("sunrise", Decimal("48.060000"), Decimal("12.860000"), app=app, nowfun=lambda: NOW)
    assert repr(sunrise) == "<solar: sunrise at latitude 48.060000, longitude: 12.860000>"
    until = sunrise.remaining_estimate(NOW)
    assert dt.timedelta(hours=18, minutes=32) < until < dt.timedelta(hours=18, minutes=34)
    assert solar._all_events == {
        "dawn_astronomical", "dawn_civil", "dawn_nautical", "dusk_astronomical", "dusk_civil",
        "dusk_nautical", "solar_noon", "sunrise", "sunset",
    }  # fmt: skip
    with pytest.raises(ValueError, match="latitude must be a number from -90 to 90, not Decimal"):
        solar("sunrise", Decimal("NaN"), 0, app=app)
