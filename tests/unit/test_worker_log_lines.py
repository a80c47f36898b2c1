"""The parts of the worker's success and failure lines: a result's repr and an error's
``Type('message')`` with its traceback, for any stored text (the line is written before the
outcome: it must never raise)."""

from __future__ import annotations

import json

from pgtasks.engine.failures import encode_exception
from pgtasks.worker.logs import error_repr, result_repr


def test_result_repr_is_the_value_repr_cut_as_celery_does() -> None:
    assert result_repr(json.dumps({"a": [1, "b"]})) == "{'a': [1, 'b']}"
    assert result_repr(None) == "None"
    assert result_repr(json.dumps("x" * 5000)) == "'" + "x" * 1020 + "..."
    assert result_repr("gASVBQAAAAAAAACMAXiULg==") == "gASVBQAAAAAAAACMAXiULg=="  # not JSON: as stored


def test_result_repr_survives_outputs_nested_too_deep_to_parse() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    assert result_repr(deep) == deep[:1021] + "..."


def test_error_repr_rebuilds_celerys_form_and_keeps_the_traceback() -> None:
    try:
        raise KeyError("card")
    except KeyError as exc:
        stored = encode_exception(exc)
    shown, traceback = error_repr(stored)
    assert shown == "KeyError('card')"
    assert traceback is not None and traceback.startswith("Traceback (most recent call last):")
    assert traceback.rstrip().endswith("KeyError: 'card'")
    assert error_repr("not json") == ("'not json'", None)
    assert error_repr(json.dumps({"type": "Boom", "message": "m", "args": None})) == ("Boom('m')", None)


class Invalid(Exception):
    """Built with no arguments, its message from __str__, as pydantic's ValidationError."""

    def __str__(self) -> str:
        return "1 validation error for ArgModel"


def test_error_repr_shows_the_message_of_an_exception_built_without_arguments() -> None:
    try:
        raise Invalid()
    except Invalid as exc:
        stored = encode_exception(exc)
    assert error_repr(stored)[0] == "Invalid('1 validation error for ArgModel')"
    try:
        raise ValueError()
    except ValueError as exc:
        stored = encode_exception(exc)
    assert error_repr(stored)[0] == "ValueError()"
