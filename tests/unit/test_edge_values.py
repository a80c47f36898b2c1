"""Edge values that once slipped through validation: each is now refused clearly."""

from __future__ import annotations

import math

import pytest

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.options import build_new_task
from pgtasks.engine.serialization import Codec
from pgtasks.engine.steps import StepOptions
from pgtasks.sysdb.identifiers import quote_identifier
from pgtasks.sysdb.urls import parse_database_url
from tests.support.requests import enqueue_request


def build(**kw: object) -> object:
    return build_new_task(enqueue_request("t", **kw), Codec(), "default", 3)  # type: ignore[arg-type]


def test_identifier_with_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        quote_identifier("pgtasks\n")
    with pytest.raises(ConfigurationError, match="schema name"):
        parse_database_url("postgresql://u:p@h/db?schema=pgtasks%0A")


@pytest.mark.parametrize(
    "url", ["sqlite:///:memory:?cache=shared", "sqlite:///?mode=memory", "sqlite:///?x=1"]
)
def test_sqlite_memory_or_empty_paths_are_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="in-memory"):
        parse_database_url(url)


@pytest.mark.parametrize("countdown", [10**400, 1e300, -1, math.nan])
def test_countdown_out_of_range_is_refused(countdown: float) -> None:
    with pytest.raises(ConfigurationError, match="countdown"):
        build(countdown=countdown)


def test_empty_queue_and_task_id_are_refused_not_defaulted() -> None:
    with pytest.raises(ConfigurationError, match="queue"):
        build(queue="")
    with pytest.raises(ConfigurationError, match="task_id"):
        build(task_id="")


def test_step_backoff_caps_instead_of_overflowing() -> None:
    assert StepOptions("s").delay(2000) == 60.0


@pytest.mark.parametrize(
    "kw", [{"max_backoff": math.nan}, {"backoff": math.nan}, {"backoff_rate": math.inf}, {"retries": "a"}]
)
def test_step_options_refuse_non_finite_or_non_numbers(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        StepOptions("s", **kw)  # type: ignore[arg-type]


def test_password_in_a_query_parameter_is_redacted() -> None:
    from pgtasks.sysdb.urls import redact_url

    shown = redact_url("postgresql://u@h/db?sslmode=require&password=s3cret")
    assert "s3cret" not in shown and "password=***" in shown and "sslmode=require" in shown


def test_long_schema_names_get_a_valid_channel() -> None:
    from pgtasks.sysdb.postgres import notify_channel

    assert len(notify_channel("s" * 63)) <= 63
    assert notify_channel("s" * 63) != notify_channel("s" * 62 + "t")
    assert notify_channel("pgtasks") == "pgtasks_pgtasks"
