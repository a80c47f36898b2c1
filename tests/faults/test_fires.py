"""The scheduled-fires check itself: it passes a complete set of fires and catches a missing
due time, a fire that was not due, a due time fired twice and a scheduler that fell behind
(rows written by hand, no scheduler)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from pgtasks import App, Client
from tests.faults.fires import check_fires
from tests.faults.invariants import install_history, query

CRON = "*/10 * * * * *"  # every ten seconds
ACTIVE = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
DUE = [f"2026-03-01T12:00:{s:02d}Z" for s in (10, 20, 30, 40)]


@pytest.fixture
def url(database_url: str) -> Iterator[str]:
    install_history(database_url)
    app = App("fires", database_url=database_url)
    app.schedule("tick", "faults.steps", cron=CRON, timezone="UTC", automatic_backfill=True)
    query(
        database_url,
        "UPDATE {s} SET active_since = ?, last_fired_at = ? WHERE schedule_name = 'tick'",
        ("2026-03-01T12:00:00Z", DUE[-1]),
    )
    yield database_url
    app.engine.close()


def fire(url: str, *due: str) -> None:
    client = Client(url)
    for instant in due:
        client.enqueue("faults.steps", task_id=f"sched-tick-{instant}")
    client.close()


def test_every_due_time_fired_once_passes(url: str) -> None:
    fire(url, *DUE)
    report = check_fires(url, "tick", CRON, caught_up_by=ACTIVE + dt.timedelta(seconds=45))
    assert report.problems == []
    assert sorted(report.task_ids) == [f"sched-tick-{d}" for d in DUE] and report.expected == 4
    assert "4 fired of 4 due: PASSED" in report.summary()


def test_a_missing_and_an_undue_fire_are_caught(url: str) -> None:
    fire(url, DUE[0], DUE[1], DUE[3], "2026-03-01T12:00:25Z")
    problems = check_fires(url, "tick", CRON).problems
    assert problems == [
        "1 due times never fired: 2026-03-01T12:00:30Z",
        "1 fires at times that were not due: 2026-03-01T12:00:25Z",
    ]


def test_a_due_time_fired_twice_is_caught(url: str) -> None:
    fire(url, *DUE)
    query(url, "DELETE FROM {t} WHERE workflow_uuid = ?", (f"sched-tick-{DUE[2]}",))
    fire(url, DUE[2])
    assert check_fires(url, "tick", CRON).problems == [
        f"1 due times fired more than once: sched-tick-{DUE[2]}"
    ]


def test_a_scheduler_that_fell_behind_is_caught(url: str) -> None:
    fire(url, *DUE)
    late = ACTIVE + dt.timedelta(seconds=65)  # 12:01:05: 12:00:50 at least should have fired
    assert check_fires(url, "tick", CRON, caught_up_by=late).problems == [
        "schedule 'tick' fell behind: its cursor was 12:00:40, not 12:00:50 or later"
    ]
    assert check_fires(url, "nope", CRON).problems == ["no schedule named 'nope'"]
