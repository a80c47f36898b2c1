"""Task options of the wrong kind, met as a real worker runs the task: the task fails once,
with the error its own code raised or one naming the option, never an error of pgtasks'
internals, and is not retried at once in a loop. A real `pgtasks worker` subprocess (prefork)."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks.engine.errors import ConfigurationError
from tests.compat.apps import bad_options_app as proj
from tests.support.celery_worker import celery_worker


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    module, path = "tests.compat.apps.bad_options_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "badopts-w1", pool="prefork"):
        yield path


def test_a_bad_option_fails_the_task_once_naming_it(ledger: Path) -> None:
    cases = [
        # Celery stores the task's own error, then trips over throws=5; pgtasks stored the
        # TypeError of that isinstance() instead
        (proj.bad_throws.delay(), ValueError, "the task's own error"),
        # these were read as 'now': retried at once until max_retries, then MaxRetriesExceeded
        (
            proj.retry_with.delay("countdown", "x"),
            ConfigurationError,
            "retry of task 'badopts.retry_with': countdown must be a number of seconds, not 'x'",
        ),
        (
            proj.retry_with.delay("countdown", float("nan")),
            ConfigurationError,
            "retry of task 'badopts.retry_with': countdown must be a number of seconds, not nan",
        ),
        (
            proj.retry_with.delay("eta", "tomorrow"),
            ConfigurationError,
            "retry of task 'badopts.retry_with': eta must be a datetime or an ISO 8601 string, "
            "not 'tomorrow'",
        ),
        (
            proj.bad_delay.delay(),
            ConfigurationError,
            "retry of task 'badopts.bad_delay': default_retry_delay must be a number of seconds, not 'x'",
        ),
        # was TypeError: catching classes that do not inherit from BaseException is not allowed
        (proj.bad_autoretry.delay(), ValueError, "not retried"),
        # was TypeError: '>=' not supported between instances of 'int' and 'str'
        (
            proj.bad_max_retries.delay(),
            TypeError,
            "max_retries of task 'badopts.bad_max_retries' must be a number or None, not '3'",
        ),
    ]
    for result, kind, message in cases:
        with pytest.raises(kind) as failed:
            result.get(timeout=60)
        assert str(failed.value) == message
        assert result.state == "FAILURE"
    bodies = ("bad_throws", "retry_with", "bad_delay", "bad_max_retries", "bad_autoretry")
    # (other apps' signal receivers, connected in this process by earlier tests, note sends too)
    runs = collections.Counter(line for line in ledger.read_text().splitlines() if line in bodies)
    assert runs == {
        "bad_throws": 1,
        "retry_with": 3,
        "bad_delay": 1,
        "bad_max_retries": 1,
        "bad_autoretry": 1,
    }


def test_a_time_limit_or_autoretry_for_of_the_wrong_kind_is_warned_of_as_the_task_is_defined(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """It was ignored without a word (the task ran without a limit); Celery's prefork worker
    stops on the first such task ('could not convert string to float')."""
    from celery import Celery

    app = Celery("limits", broker=sqlite_url)
    try:
        with caplog.at_level("WARNING", logger="pgtasks.compat"):
            app.task(name="limits.text", time_limit="x")(lambda: None)
            app.task(name="limits.negative", soft_time_limit=-1)(lambda: None)
            app.task(name="limits.fine", time_limit=5, soft_time_limit=0)(lambda: None)
            app.task(name="limits.retry", autoretry_for=(KeyError, 5))(lambda: None)
        assert [r.getMessage() for r in caplog.records] == [
            "task limits.text: time_limit='x' is not a number of seconds > 0; the task runs "
            "without that limit",
            "task limits.negative: soft_time_limit=-1 is not a number of seconds > 0; the task runs "
            "without that limit",
            "task limits.retry: autoretry_for=(<class 'KeyError'>, 5) is not a tuple of exception classes; "
            "it acts on KeyError only",
        ]
    finally:
        app.close()
