"""A worker's start-up writes wait out an outage that begins after the start-up wait found the
database (a restart in the middle of a worker's start), instead of exiting."""

from __future__ import annotations

import pytest

from pgtasks.engine.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.worker import worker as worker_module


def test_a_start_up_step_is_retried_through_an_outage() -> None:
    attempts: list[int] = []

    def step() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise DatabaseUnavailable("the server restarts")
        return "registered"

    assert worker_module._through_outages(step) == "registered"
    assert len(attempts) == 3


def test_an_outage_longer_than_the_limit_fails_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "START_OUTAGE_SECONDS", 0.3)

    def step() -> None:
        raise DatabaseUnavailable("still down")

    with pytest.raises(DatabaseUnavailable, match="still down"):
        worker_module._through_outages(step)


def test_other_errors_are_not_retried() -> None:
    attempts: list[int] = []

    def step() -> None:
        attempts.append(1)
        raise ConfigurationError("a worker named w1 is already running")

    with pytest.raises(ConfigurationError):
        worker_module._through_outages(step)
    assert len(attempts) == 1
