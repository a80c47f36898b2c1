"""Celery's ``celery.beat`` classes as libraries subclass them (django-celery-beat's
``DatabaseScheduler`` and ``ModelEntry``, whose own test suite drives them): an entry's
``next()``, equality and ``update``, and a scheduler's heap, ``tick``, ``reserve`` and
``merge_inplace``, sending through a real SQLite database. The figures are real Celery 5.5's
for the same inputs."""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import pytest
from celery import Celery
from celery.beat import BeatLazyFunc, ScheduleEntry, Scheduler, SchedulingError
from celery.schedules import crontab, schedule

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 27, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def app(sqlite_app: Celery) -> Celery:
    return sqlite_app


def test_an_entry_once_run_is_a_new_entry_counted_once_more(app: Celery) -> None:
    every = schedule(10, app=app, nowfun=lambda: NOW)
    entry = ScheduleEntry("add", "beatapp.add", NOW - dt.timedelta(hours=1), 4, every, [2, 3], app=app)
    assert entry.is_due() == (True, 10.0)
    ran = next(entry)
    assert (ran.last_run_at, ran.total_run_count, ran.args) == (NOW, 5, [2, 3])
    assert (entry.last_run_at, entry.total_run_count) == (NOW - dt.timedelta(hours=1), 4)  # unchanged
    assert ran == entry and ran is not entry  # equal by task, schedule, arguments and options
    assert repr(entry) == "<ScheduleEntry: add beatapp.add(2, 3) <freq: 10.00 seconds>"
    other = ScheduleEntry("add", "beatapp.mul", schedule=every, kwargs={"x": 1}, app=app)
    assert other != entry and other.last_run_at == NOW  # now, by the schedule's clock
    entry.update(other)
    assert (entry.task, entry.kwargs, entry.total_run_count) == ("beatapp.mul", {"x": 1}, 4)
    copy = pickle.loads(pickle.dumps(ScheduleEntry("p", "beatapp.add", NOW, 1, 30, (1,))))
    assert (copy.name, copy.last_run_at, copy.total_run_count, copy.schedule.seconds) == ("p", NOW, 1, 30)


class PropertyScheduler(Scheduler):
    """As django-celery-beat's DatabaseScheduler: ``schedule`` is its own property."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._entries: dict[str, Any] = {}
        super().__init__(*args, **kwargs)

    @property
    def schedule(self) -> dict[str, Any]:
        return self._entries


def test_tick_sends_the_due_entry_and_reserves_its_next_run(app: Celery) -> None:
    app.conf.result_expires = None  # no celery.backend_cleanup entry
    due = {
        "task": "beatapp.add",
        "schedule": schedule(60, app=app),
        "args": (2, BeatLazyFunc(lambda: 3)),
        "last_run_at": dt.datetime.now(UTC) - dt.timedelta(minutes=5),
    }
    later = {"task": "beatapp.later", "schedule": schedule(600, app=app)}
    scheduler = PropertyScheduler(app, max_interval=30)
    scheduler.update_from_dict({"due": due, "later": later})
    assert scheduler.tick() == 0
    sent = scheduler.schedule["due"]
    assert sent.total_run_count == 1 and sent.last_run_at > due["last_run_at"]
    [task] = [t for t in app.list_tasks() if t.name == "beatapp.add"]
    assert task.inputs == '{"args":[2,3],"kwargs":{}}'  # the lazy argument evaluated at the send
    # Nothing else due: it sleeps until the next due time, at most max_interval.
    assert 29 < scheduler.tick() <= 30
    assert [t.name for t in app.list_tasks()] == ["beatapp.add"]


def test_the_default_entries_and_the_beat_schedule_merged_in_place(app: Celery) -> None:
    app.conf.beat_schedule = {"tick": {"task": "beatapp.tick", "schedule": 30.0}}
    scheduler = Scheduler(app, max_interval=5)
    # As Celery's: the beat_schedule merged last leaves only its own entries.
    assert set(scheduler.schedule) == {"tick"}
    scheduler.install_default_entries({})
    cleanup = scheduler.schedule["celery.backend_cleanup"]
    assert cleanup.schedule == crontab("0", "4", "*") and cleanup.options == {"expires": 43200}
    tick = scheduler.schedule["tick"] = next(scheduler.schedule["tick"])
    merged = {"tick": {"task": "beatapp.tick", "schedule": 60.0}, "new": {"task": "n", "schedule": 9}}
    scheduler.merge_inplace(merged)
    assert set(scheduler.schedule) == {"tick", "new"}  # the others removed
    assert scheduler.schedule["tick"] is tick and tick.total_run_count == 1 and tick.schedule.seconds == 60
    assert scheduler.max_interval == 5 and scheduler.should_sync()


def test_a_send_that_fails_is_a_scheduling_error_and_apply_entry_logs_it(
    app: Celery, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = Scheduler(app, lazy=True)
    entry = scheduler.add(name="bad", task="beatapp.x", schedule=10, options={"countdwon": 5})
    with pytest.raises(SchedulingError, match=r"Couldn't apply scheduled task bad: .*countdown"):
        scheduler.apply_async(entry)
    scheduler.apply_entry(entry)  # the beat goes on
    assert "Message Error" in caplog.text and scheduler.schedule == {"bad": entry}
