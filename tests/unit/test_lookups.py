"""What a reader passes to look a task up or wait for it (engine/lookups.py): an id no task can
have, a timeout that never expires and a poll interval that is no pause are refused by name."""

from __future__ import annotations

import decimal
import fractions
import math

import pytest

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.lookups import checked_task_id, poll_interval, wait_timeout


@pytest.mark.parametrize("task_id", [None, 123, b"abc", 1.5])
def test_an_id_that_is_not_a_string_is_a_type_error_naming_the_task_id(task_id: object) -> None:
    with pytest.raises(TypeError, match="a task id must be a string, not "):
        checked_task_id(task_id)


@pytest.mark.parametrize(
    ("task_id", "why"),
    [
        ("a\x00b", "contains a NUL character"),
        ("\ud800", "is not valid Unicode"),
        ("é\udcff", "lone surrogate"),
    ],
)
def test_an_id_no_database_column_holds_is_a_value_error(task_id: str, why: str) -> None:
    with pytest.raises(ConfigurationError, match=why) as refused:
        checked_task_id(task_id)
    assert isinstance(refused.value, ValueError) and "task id" in str(refused.value)


def test_ordinary_ids_pass_unchanged() -> None:
    for task_id in ("not-a-uuid", "f" * 36, "tâche-ü", "", "x" * 10_000):
        assert checked_task_id(task_id) is task_id


@pytest.mark.parametrize("timeout", [math.nan, -math.inf])
def test_a_timeout_that_never_expires_or_has_no_meaning_is_refused(timeout: float) -> None:
    with pytest.raises(ConfigurationError, match="timeout must be a number of seconds or None, not "):
        wait_timeout(timeout)


@pytest.mark.parametrize("timeout", ["x", "5", [], decimal.Decimal("1")])
def test_a_timeout_that_is_not_a_number_is_a_type_error(timeout: object) -> None:
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not "):
        wait_timeout(timeout)


def test_a_timeout_may_be_a_numeric_string_where_celery_reads_one() -> None:
    assert wait_timeout("2.5", text=True) == 2.5
    with pytest.raises(ConfigurationError, match="timeout must be a number of seconds or None, not 'x'"):
        wait_timeout("x", text=True)
    with pytest.raises(ConfigurationError, match="not 'nan'"):
        wait_timeout("nan", text=True)


def test_usual_timeouts_pass() -> None:
    assert wait_timeout(None) is None
    assert wait_timeout(3) == 3.0 and wait_timeout(-1) == -1.0  # expired already: one look
    assert wait_timeout(math.inf) == math.inf and wait_timeout(10**400) == math.inf
    # what float() reads as Celery's waits do: True, and numbers.Real (numpy's scalars)
    assert wait_timeout(True) == 1.0 and wait_timeout(fractions.Fraction(1, 2)) == 0.5


@pytest.mark.parametrize("interval", [-1, math.nan, math.inf])
def test_a_poll_interval_must_be_a_finite_pause(interval: float) -> None:
    with pytest.raises(ConfigurationError, match="interval must be a finite number of seconds >= 0"):
        poll_interval(interval)
    with pytest.raises(TypeError, match="interval must be a number of seconds, not str"):
        poll_interval("0.5")
    assert poll_interval(0) == 0.0
