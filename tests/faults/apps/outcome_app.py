"""Tasks whose outcome cannot be encoded, for the worker subprocesses of
``tests/faults/test_unencodable_outcomes.py``. Every body appends one ``run`` line to the effects
ledger, so the test counts how many times each body ran."""

from __future__ import annotations

from typing import Any

from pgtasks import App
from tests.support.ledger import append

app = App("outcomes", poll_interval=0.05, max_payload_bytes=100_000)


class BadStr(Exception):
    """An exception whose ``__str__`` (and ``__repr__``) raise."""

    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@app.task(name="outcomes.deep_result")
def deep_result(depth: int) -> list[Any]:
    append("run")
    return nested(depth)


@app.task(name="outcomes.bad_str")
def bad_str() -> None:
    append("run")
    raise BadStr("hidden")


@app.task(name="outcomes.bad_args")
def bad_args() -> None:
    append("run")
    raise ValueError({1, 2}, object())


@app.task(name="outcomes.deep_error")
def deep_error() -> None:
    append("run")
    raise ValueError(nested(5000))  # its str() and its args' JSON both recurse too deeply


@app.task(name="outcomes.huge_result")
def huge_result() -> str:
    append("run")
    return "x" * 200_000


@app.task(name="outcomes.fine")
def fine() -> int:
    append("run")
    return 42
