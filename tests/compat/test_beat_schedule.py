"""Celery's ``beat_schedule``, ``add_periodic_task`` and schedule classes, fed to the native
scheduler through the App's schedule-source hook (moved from tests/integration/test_schedules_beat.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from pgtasks import App
from pgtasks.compat import Celery
from pgtasks.compat.celery.schedules import crontab
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler import Beat, ManualClock, fire_task_id

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.fixture
def app(database_url: str) -> Iterator[Celery]:
    application = Celery("sched", broker=database_url)
    yield application
    application.close()


def minutes(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def test_beat_schedule_and_add_periodic_task_are_synced_and_removed_entries_deactivated(app: Celery) -> None:
    clock = ManualClock(T0)
    app.conf.timezone = "Europe/Paris"
    app.beat_schedule = {
        "paris-9am": {"task": "sched.tick", "schedule": crontab(minute=0, hour=9)},
        "every-2m": {"task": "sched.tick", "schedule": dt.timedelta(minutes=2), "args": (1,)},
    }
    key = app.add_periodic_task(300.0, "sched.other", args=(2,), name="five")
    assert key == "five"
    beat = Beat(app.engine, clock)
    beat.sync(app.beat_definitions(), app.beat_source)
    stored = {s.name: s for s in app.schedules_list()}
    assert set(stored) == {"paris-9am", "every-2m", "five"}
    assert stored["paris-9am"].timezone == "Europe/Paris" and stored["every-2m"].interval_seconds == 120
    clock.set(minutes(2))
    assert beat.tick().fired == [fire_task_id("every-2m", minutes(2))]
    clock.set(minutes(5))
    assert sorted(beat.tick().fired) == [
        fire_task_id("every-2m", minutes(4)),
        fire_task_id("five", minutes(5)),
    ]
    # A later deploy drops two entries: they are deactivated, not deleted.
    del app.beat_schedule["every-2m"], app.beat_schedule["five"]
    Beat(app.engine, clock).sync(app.beat_definitions(), app.beat_source)
    status = {s.name: s.status for s in app.schedules_list()}
    assert status == {"paris-9am": "ACTIVE", "every-2m": "INACTIVE", "five": "INACTIVE"}
    clock.set(minutes(10))
    assert beat.tick().fired == []
    clock.set(dt.datetime(2026, 11, 23, 8, 0, tzinfo=UTC))  # 09:00 in Paris (UTC+1)
    assert beat.tick().fired == [fire_task_id("paris-9am", dt.datetime(2026, 11, 23, 8, 0, tzinfo=UTC))]


def test_the_native_app_has_no_celery_schedule_names() -> None:
    for name in ("beat_schedule", "add_periodic_task"):
        assert not hasattr(App, name) and hasattr(Celery, name)


def test_a_crontab_shows_its_fields_as_celerys_sets_of_numbers() -> None:
    """django-celery-beat's admin describes a crontab row from these (its human_readable)."""
    workdays = crontab(minute="*/15", hour="9-17", day_of_week="mon-fri")
    assert workdays.minute == {0, 15, 30, 45} and workdays.hour == set(range(9, 18))
    assert workdays.day_of_week == {1, 2, 3, 4, 5} and workdays.day_of_month == set(range(1, 32))
    assert workdays.month_of_year == set(range(1, 13))
    assert crontab(minute=0, hour=4).day_of_week == set(range(7))
    assert crontab(day_of_week="sun,sat").day_of_week == {0, 6}


def test_an_entry_whose_arguments_are_of_the_wrong_kind_is_named(app: Celery) -> None:
    from pgtasks.compat.bridge.beat_schedule import definitions_for_app
    from pgtasks.engine.errors import ConfigurationError

    app.conf.beat_schedule = {"nightly": {"task": "sched.tick", "schedule": 60, "args": 5}}
    with pytest.raises(ConfigurationError, match=r"beat_schedule\['nightly'\]: args must be a list or tuple"):
        definitions_for_app(app)  # routed first (task_routes), then defined: named before either
    app.conf.beat_schedule = {"nightly": {"task": "sched.tick", "schedule": 60, "kwargs": [1]}}
    with pytest.raises(ConfigurationError, match=r"beat_schedule\['nightly'\]: kwargs must be a dict"):
        definitions_for_app(app)
    # both were a traceback from the beat (and from `worker -B`)
    app.conf.beat_schedule = {"nightly": {"task": "sched.tick", "schedule": 60, "options": 5}}
    with pytest.raises(
        ConfigurationError, match=r"^beat_schedule\['nightly'\]: options must be a dict, not int$"
    ):
        definitions_for_app(app)
    app.conf.beat_schedule = [{"task": "sched.tick", "schedule": 60}]
    with pytest.raises(ConfigurationError, match=r"^beat_schedule must be a dict, not list$"):
        definitions_for_app(app)


def test_day_and_month_names_spelt_out_are_read_by_their_first_three_letters() -> None:
    weekdays = crontab(minute=0, hour=9, day_of_week="Monday-friday", month_of_year="January,march")
    assert weekdays.day_of_week == {1, 2, 3, 4, 5} and weekdays.month_of_year == {1, 3}
    assert crontab(day_of_week="sunday").day_of_week == {0}


def test_a_fractional_or_short_period_fires_on_whole_seconds(
    app: Celery, caplog: pytest.LogCaptureFixture
) -> None:
    from pgtasks.compat.celery.schedules import schedule

    half = schedule(0.5)
    assert (half.seconds, half.fire_seconds, half.run_every) == (0.5, 1, dt.timedelta(seconds=0.5))
    assert schedule(dt.timedelta(seconds=1.5)).fire_seconds == 2 and schedule(30).fire_seconds == 30
    app.beat_schedule = {
        "half": {"task": "sched.tick", "schedule": half},
        "zero": {"task": "sched.tick", "schedule": 0},
        "one-and-a-half": {"task": "sched.tick", "schedule": dt.timedelta(seconds=1.5)},
    }
    Beat(app.engine, ManualClock(T0)).sync(app.beat_definitions(), app.beat_source)
    stored = {s.name: s.interval_seconds for s in app.schedules_list()}
    assert stored == {"half": 1, "zero": 1, "one-and-a-half": 2}
    assert "fires every 1 s: pgtasks fires on whole seconds" in caplog.text
    for negative in (-5, dt.timedelta(seconds=-1)):  # fired every second, with that warning
        with pytest.raises(ConfigurationError, match="period must be 0 or more seconds, not -"):
            schedule(negative)
