"""Length limits of identifier-like inputs, and arguments JSON would change (issue 17, item 4).

Each limit is the same on PostgreSQL and SQLite and is checked before any SQL, with a message
naming the field and the limit; the value at the limit is accepted and stored as given. Deep
nesting is a ``SerializationError`` at ``delay()``, and keys that are not strings are refused."""

from __future__ import annotations

from typing import Any

import pytest

from pgtasks import App, ConfigurationError, SerializationError
from pgtasks.engine.settings import MAX_KEY_BYTES, MAX_NAME_CHARS
from pgtasks.scheduler import define_schedule
from pgtasks.worker import WorkerOptions
from tests.security.support import refused
from tests.support.requests import enqueue_request


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("option", "limit", "unit", "char"),
    [
        ("deduplication_id", MAX_KEY_BYTES, "bytes", "k"),
        ("deduplication_id", MAX_KEY_BYTES, "bytes", "é"),  # two bytes each: counted in UTF-8
        ("partition_key", MAX_KEY_BYTES, "bytes", "p"),
    ],
)
def test_keys_over_their_limit_are_refused_before_the_database(
    app: App, option: str, limit: int, unit: str, char: str
) -> None:
    size = len(char.encode())
    over = char * (limit // size + 1)
    refused(
        app,
        lambda: app.enqueue("sec.t", **{option: over}),
        f"{option} {over[:40]!r}... is {len(over) * size} {unit} long (UTF-8); the limit is {limit} {unit}",
        ConfigurationError,
    )
    at_limit = char * (limit // size)
    handle = app.enqueue("sec.t", **{option: at_limit})
    record = app.engine.get_task(handle.id)
    assert record is not None and getattr(record, option) == at_limit


def test_names_over_their_limit_are_refused(app: App) -> None:
    name = "n" * (MAX_NAME_CHARS + 1)
    message = f"is {MAX_NAME_CHARS + 1} characters long; the limit is {MAX_NAME_CHARS} characters"
    refused(app, lambda: app.enqueue(name), f"task name {name[:40]!r}... {message}", ConfigurationError)
    with pytest.raises(ConfigurationError, match=f"task name .*{message}"):
        app.task(name=name)(lambda: None)
    ok = "é" * MAX_NAME_CHARS
    assert app.engine.get_task(app.enqueue(ok).id).name == ok  # type: ignore[union-attr]
    with pytest.raises(ConfigurationError, match=f"worker name \\(executor id\\) .*{message}"):
        WorkerOptions(executor_id=name)
    with pytest.raises(ConfigurationError, match=f"application_version .*{message}"):
        app.engine.enqueue([enqueue_request("sec.t", application_version=name)])
    with pytest.raises(ConfigurationError, match=r"schedule name .* is longer than 200 characters"):
        define_schedule("s" * 201, "sec.t", cron="* * * * *")


def test_deep_arguments_are_a_serialization_error(app: App) -> None:
    refused(
        app, lambda: app.enqueue("sec.t", [nested(5000)]), "argument 0 of task 'sec.t'", SerializationError
    )
    refused(
        app, lambda: app.enqueue("sec.t", [], {"k": nested(5000)}), "nested too deeply", SerializationError
    )
    assert app.engine.get_task(app.enqueue("sec.t", [nested(100)]).id) is not None


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ([], {1: 2}, "keyword argument names of task 'sec.t' must be str, not int (1)"),
        ([], {None: 2}, "must be str, not NoneType (None)"),
        ([{1: "a"}], {}, "the key 1 of argument 0 is of type int, not str"),
        ([[{"ok": {(1, 2): 0}}]], {}, "the key (1, 2) of argument 0[0]['ok'] is of type tuple"),
        ([], {"k": {"x": [{True: 1}]}}, "the key True of keyword argument 'k'['x'][0] is of type bool"),
    ],
)
def test_keys_that_are_not_strings_are_refused(
    app: App, args: list[Any], kwargs: dict[Any, Any], message: str
) -> None:
    refused(app, lambda: app.enqueue("sec.t", args, kwargs), message, SerializationError)
