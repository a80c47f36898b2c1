"""Bad input to durable waiting (docs/waiting.md) is refused with an error that says what is
wrong, before anything is written; the calls that need a running task say so outside one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import pgtasks
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.waiting import duration_seconds, topic_name


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5", "must be a number of seconds or a timedelta"),
        (True, "must be a number of seconds or a timedelta"),
        (-1, "finite number of seconds >= 0"),
        (float("nan"), "finite number of seconds >= 0"),
        (dt.timedelta(seconds=-2), "finite number of seconds >= 0"),
    ],
)
def test_a_duration_must_be_finite_seconds_or_a_timedelta(value: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        duration_seconds(value, "sleep duration")  # type: ignore[arg-type]


def test_good_durations_and_topics() -> None:
    assert duration_seconds(dt.timedelta(minutes=1), "x") == 60.0 and duration_seconds(2, "x") == 2.0
    assert topic_name(None) == "__default__" and topic_name("payment") == "payment"
    with pytest.raises(ConfigurationError, match="non-empty string or None"):
        topic_name("")


def test_waits_and_writes_need_a_running_task() -> None:
    for call in (
        lambda: pgtasks.recv("t", timeout=1),
        lambda: pgtasks.send("some-task", 1),
        lambda: pgtasks.set_event("k", 1),
        lambda: pgtasks.get_event("some-task", "k"),
        lambda: pgtasks.write_stream("k", 1),
        lambda: pgtasks.close_stream("k"),
    ):
        with pytest.raises(RuntimeError, match="works inside a running task only"):
            call()
    pgtasks.sleep(0)  # outside a task, an ordinary sleep


def test_bad_sends_and_keys_are_refused_before_any_write(tmp_path: Path) -> None:
    client = pgtasks.Client(f"sqlite:///{tmp_path / 'never-opened.sqlite3'}")
    with pytest.raises(ConfigurationError, match="destination must be a task id"):
        client.send("", 1)
    with pytest.raises(ConfigurationError, match="idempotency_key must be a non-empty string"):
        client.send("t", 1, idempotency_key="")
    with pytest.raises(ConfigurationError, match="reserved by pgtasks"):
        client.get_event("t", "state")
    with pytest.raises(ConfigurationError, match="must be a non-empty string"):
        list(client.read_stream("t", ""))
    assert not (tmp_path / "never-opened.sqlite3").exists()
    client.close()
