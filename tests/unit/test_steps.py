"""StepOptions: retry back-off and validation."""

from __future__ import annotations

import pytest

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.steps import StepOptions, run_step


def test_defaults_double_from_one_second_up_to_a_minute() -> None:
    options = StepOptions("fetch")
    assert [options.delay(n) for n in range(1, 9)] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_custom_backoff_rate_and_cap() -> None:
    options = StepOptions("fetch", retries=5, backoff=0.5, backoff_rate=3.0, max_backoff=10.0)
    assert options.delay(1) == 0.5
    assert options.delay(2) == 1.5
    assert options.delay(3) == 4.5
    assert options.delay(4) == 10.0
    assert isinstance(options.delay(1), float)


def test_rate_one_is_constant_and_zero_backoff_is_zero() -> None:
    assert {StepOptions("s", backoff=2, backoff_rate=1).delay(n) for n in range(1, 6)} == {2.0}
    assert StepOptions("s", backoff=0).delay(4) == 0.0


def test_cap_zero_means_no_wait() -> None:
    assert StepOptions("s", backoff=5, max_backoff=0).delay(3) == 0.0


@pytest.mark.parametrize(
    "options",
    [
        {"retries": -1},
        {"backoff": -0.1},
        {"backoff_rate": 0.5},
        {"backoff_rate": 0},
        {"max_backoff": -1},
    ],
)
def test_invalid_values_refused(options: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError, match="step 'flaky'"):
        StepOptions("flaky", **options)  # type: ignore[arg-type]


def test_run_step_outside_a_task_just_calls() -> None:
    calls: list[tuple[object, ...]] = []

    def fn(a: int, b: int = 0) -> int:
        calls.append((a, b))
        return a + b

    assert run_step(StepOptions("add"), fn, (2,), {"b": 3}) == 5
    assert calls == [(2, 3)]
