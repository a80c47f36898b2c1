"""Bad input to the native result and lookup paths (audit of bad input, items B and C): a
timeout that never expires, an id no task can have, and an ``eta`` past the century cap are
refused at once with an error naming them, never handed to the driver or waited on forever."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import re
import time
from collections.abc import Iterator

import pytest

from pgtasks import App, ConfigurationError, TaskTimeoutError
from pgtasks.result import AsyncResult
from pgtasks.sysdb.records import RecentTasksParams


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    application = App("lookups", database_url=database_url, poll_interval=0.02)
    application.engine.admin.migrate()
    yield application
    application.close()


@pytest.mark.parametrize("timeout", [math.nan, -math.inf])
def test_get_with_a_timeout_that_never_expires_is_refused_at_once(app: App, timeout: float) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match="timeout must be a number of seconds or None"):
        app.AsyncResult("not-a-uuid").get(timeout=timeout)
    with pytest.raises(ConfigurationError, match="timeout must be a number of seconds or None"):
        asyncio.run(app.AsyncResult("not-a-uuid").get_async(timeout=timeout))
    assert time.monotonic() - started < 5


def test_get_with_a_timeout_that_is_not_a_number_is_a_type_error(app: App) -> None:
    with pytest.raises(TypeError, match=r"timeout must be a number of seconds or None, not str \('x'\)"):
        app.AsyncResult("not-a-uuid").get(timeout="x")  # type: ignore[arg-type]
    with pytest.raises(TaskTimeoutError, match="no task with id 'not-a-uuid' exists"):
        app.AsyncResult("not-a-uuid").get(timeout=-1)  # expired already: one look


@pytest.mark.parametrize("task_id", [None, 123])
def test_an_id_that_is_not_a_string_is_refused_by_name(app: App, task_id: object) -> None:
    with pytest.raises(TypeError, match="a task id must be a string, not "):
        app.AsyncResult(task_id)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a task id must be a string"):
        AsyncResult(task_id, app.engine)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("task_id", "why"), [("a\x00b", "contains a NUL character"), ("\ud800", "a lone surrogate")]
)
def test_an_id_no_task_can_have_is_a_value_error_on_every_lookup(app: App, task_id: str, why: str) -> None:
    with pytest.raises(ConfigurationError, match=why):
        app.AsyncResult(task_id)
    lookups = [
        lambda: app.get_task(task_id),
        lambda: app.cancel_task(task_id),
        lambda: app.resume_task(task_id),
        lambda: app.fork_task(task_id),
        lambda: app.task_children(task_id),
        lambda: app.engine.wait(task_id, 0),
        lambda: app.engine.read_task(task_id),
    ]
    for lookup in lookups:
        with pytest.raises(ConfigurationError, match=why):
            lookup()


def test_an_eta_past_the_century_cap_is_refused_as_countdown_is(app: App) -> None:
    @app.task(name="lookups.job")
    def job() -> None:
        return None

    with pytest.raises(
        ConfigurationError, match=r"eta 9999-12-31T23:59:59.999999\+00:00 is more than 3162240000"
    ):
        job.apply_async(eta=dt.datetime.max)
    far = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=101 * 366)
    with pytest.raises(ConfigurationError, match=r"expires .* is more than 3162240000 seconds"):
        job.apply_async(expires=far)
    near = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=99 * 366)
    assert job.apply_async(eta=near).status == "DELAYED"


@pytest.mark.parametrize(("field", "value"), [("name", "a\x00b"), ("queue", "\x00"), ("worker", "w\ud800")])
def test_a_listing_filter_no_task_can_match_is_refused_naming_it(app: App, field: str, value: str) -> None:
    """A NUL reached PostgreSQL's driver (DataError: the dashboard's 500 for ?name=%00); SQLite
    silently listed nothing."""
    app.enqueue("lookups.any")
    column = {"name": "name", "queue": "queue_name", "worker": "executor_id"}[field]
    with pytest.raises(ConfigurationError, match=f"^{column} filter {re.escape(repr(value))} "):
        app.list_tasks(**{field: value})
    if field != "queue":  # the dashboard's and Flower's listing
        with pytest.raises(ConfigurationError, match=f"^{column} filter "):
            app.engine.admin.recent_task_ids(RecentTasksParams(window=10, **{column: value}))
    assert len(app.list_tasks()) == 1


def test_names_and_keys_no_row_can_hold_are_refused_before_the_driver(app: App) -> None:
    """Each reached PostgreSQL's driver raw (psycopg.DataError: text fields cannot contain NUL),
    or (limit 2**70, created_after='x') a NumericValueOutOfRange or an AttributeError."""
    refusals = [
        (lambda: app.send("a\x00b", "hi"), "the destination task id 'a\\x00b' contains a NUL character"),
        (lambda: app.send("t", "hi", topic="a\x00"), "message topic 'a\\x00' contains a NUL character"),
        (lambda: app.get_event("a\x00b", "k", timeout=0), "task id 'a\\x00b' contains a NUL character"),
        (lambda: app.get_event("t", "k\x00", timeout=0), "event key 'k\\x00' contains a NUL character"),
        (lambda: list(app.read_stream("a\x00b", "k")), "task id 'a\\x00b' contains a NUL character"),
        (lambda: app.get_schedule("s\x00"), "schedule name 's\\x00' contains control characters"),
        (lambda: app.pause_schedule("s\x00"), "schedule name 's\\x00' contains control characters"),
        (lambda: app.delete_schedule("s\x00"), "schedule name 's\\x00' contains control characters"),
        (lambda: app.trigger_schedule("s\x00"), "schedule name 's\\x00' contains control characters"),
        (lambda: app.list_tasks(limit=2**70), "limit must be a positive integer (below 2**63), not 1180591"),
        (lambda: app.list_tasks(created_after="x"), "a time filter must be a datetime, not str ('x')"),
        (
            lambda: app.queue_activity(window_ms="x"),
            "window_ms must be a positive whole number of milliseconds",
        ),
    ]
    for call, message in refusals:
        with pytest.raises(ConfigurationError, match=f"^{re.escape(message)}"):
            call()
