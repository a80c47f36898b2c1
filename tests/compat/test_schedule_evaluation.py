"""``is_due`` / ``remaining_estimate`` of Celery's schedules, for code that shows a
schedule's next run or drives it by hand: the figures real Celery 5 gives for the same
inputs (captured from it), in the app's time zone."""

from __future__ import annotations

import datetime as dt

import pytest
from celery import Celery
from celery.schedules import crontab, schedule

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
