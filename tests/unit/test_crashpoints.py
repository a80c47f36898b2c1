"""Crash point specifications and (in raise mode only) their triggering."""

from __future__ import annotations

import pytest

from pgtasks.engine import crashpoints
from pgtasks.engine.crashpoints import MODE_ENV, POINTS, CrashPointReached, _parse, crashpoint


def test_parse_name_only() -> None:
    assert _parse("before_step_body") == ("before_step_body", {})


def test_parse_filters() -> None:
    name, filters = _parse("after_step_body_before_checkpoint:function_id=2,task_id=a=b")
    assert name == "after_step_body_before_checkpoint"
    assert filters == {"function_id": "2", "task_id": "a=b"}


def test_parse_ignores_empty_filter_items() -> None:
    assert _parse("after_claim_commit:function_id=1,")[1] == {"function_id": "1"}


@pytest.mark.parametrize("spec", ["", "before_step", "BEFORE_STEP_BODY", "nope:function_id=1"])
def test_parse_rejects_unknown_points(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown crash point"):
        _parse(spec)


def test_every_point_parses() -> None:
    assert {_parse(point)[0] for point in POINTS} == POINTS


def test_unarmed_crashpoint_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crashpoints, "_ARMED", None)
    monkeypatch.setenv(MODE_ENV, "raise")
    crashpoint("before_step_body", function_id=1)


def test_armed_crashpoint_raises_only_when_filters_match(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_ENV, "raise")
    monkeypatch.setattr(crashpoints, "_ARMED", _parse("before_step_body:function_id=2"))
    crashpoint("before_step_body", function_id=1)
    crashpoint("after_checkpoint_commit", function_id=2)
    with pytest.raises(CrashPointReached, match="before_step_body"):
        crashpoint("before_step_body", function_id=2, task_id="t")
    assert issubclass(CrashPointReached, ConnectionError)
