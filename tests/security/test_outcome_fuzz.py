"""Fuzz of the outcome path (issue 17, item 1): whatever a task returns or raises (hostile
``__str__``/``__repr__``/``__reduce__``, deep nesting, cycles, huge values), the in-process engine
execution ends it exactly once, SUCCESS or ERROR with a readable reason, and its body runs once.

Each example enqueues a task on SQLite, claims it, runs it the way every pool does
(``run_guarded``), writes the outcome, and reads the row back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgtasks import App, SerializationError
from pgtasks.engine.failures import decode_exception, encode_exception
from pgtasks.sysdb.records import ClaimParams, CompleteParams, Status
from pgtasks.worker.pools import run_guarded

CAP = 50_000
RAISED = (ValueError, RuntimeError, RecursionError, KeyError, MemoryError, KeyboardInterrupt, SystemExit)


def hostile_exception(method: str, raised: type[BaseException], base: type[BaseException]) -> BaseException:
    """An exception of a new subclass of ``base`` whose ``method`` raises ``raised``."""

    def hostile(self: Any) -> Any:
        raise raised("hostile")

    return type(f"Hostile{base.__name__}", (base,), {method: hostile})("payload")


class BadReduce:
    def __init__(self, raised: type[BaseException]) -> None:
        self.raised = raised

    def __reduce__(self) -> Any:
        raise self.raised("cannot pickle me")


def nested(depth: int, kind: str) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def cyclic() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


# Hypothesis draws recipes (plain data it can print) and the test builds the hostile values.
raised_types = st.sampled_from([t.__name__ for t in RAISED])
_RAISED = {t.__name__: t for t in RAISED}
error_recipes = st.one_of(
    st.tuples(
        st.just("hostile"),
        st.sampled_from(["__str__", "__repr__"]),
        raised_types,
        st.sampled_from(["Exception", "ValueError", "KeyError", "BaseException"]),
    ),
    st.tuples(st.just("deep_args"), st.integers(500, 6000)),
    st.tuples(st.just("odd_args")),
    st.tuples(st.just("long_message"), st.integers(0, 300_000)),
    st.tuples(st.just("reduce_arg"), raised_types),
)
value_recipes = st.one_of(
    st.tuples(st.just("nested"), st.integers(500, 6000), st.sampled_from(["list", "dict"])),
    st.tuples(st.just("cyclic")),
    st.tuples(st.just("huge"), st.integers(CAP - 10, CAP * 3)),
    st.tuples(st.just("bad_reduce"), raised_types),
    st.tuples(st.just("holds_error"), error_recipes),
    st.tuples(st.just("int"), st.integers()),
)
outcomes = st.one_of(st.tuples(st.just("raise"), error_recipes), st.tuples(st.just("return"), value_recipes))
_BASES: dict[str, type[BaseException]] = {
    "Exception": Exception,
    "ValueError": ValueError,
    "KeyError": KeyError,
    "BaseException": BaseException,
}


def build_error(recipe: tuple[Any, ...]) -> BaseException:
    kind = recipe[0]
    if kind == "hostile":
        return hostile_exception(recipe[1], _RAISED[recipe[2]], _BASES[recipe[3]])
    if kind == "deep_args":
        return ValueError(nested(recipe[1], "list"))
    if kind == "odd_args":
        return RuntimeError({1, 2}, object(), cyclic())
    if kind == "long_message":
        return ValueError("m" * recipe[1])
    return TypeError(BadReduce(_RAISED[recipe[1]]))


def build_value(recipe: tuple[Any, ...]) -> Any:
    kind = recipe[0]
    if kind == "nested":
        return nested(recipe[1], recipe[2])
    if kind == "cyclic":
        return cyclic()
    if kind == "huge":
        return "x" * recipe[1]
    if kind == "bad_reduce":
        return BadReduce(_RAISED[recipe[1]])
    if kind == "holds_error":
        return {"error": build_error(recipe[1])}
    return recipe[1]


@pytest.fixture(params=["json", "pickle"])
def fuzz_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[App, list[Any]]]:
    serializer = request.param
    app = App(
        "fuzz",
        database_url=f"sqlite:///{tmp_path / 'fuzz.sqlite3'}",
        serializer=serializer,
        accept_content=[serializer],
        max_payload_bytes=CAP,
    )
    plan: list[Any] = []  # [what, value] for the next run; the body appends "ran" per run

    @app.task(name="fuzz.body")
    def body() -> Any:
        plan.append("ran")
        what, value = plan[0]
        if what == "raise":
            raise value
        return value

    yield app, plan
    app.close()


def run_once(app: App, plan: list[Any], outcome: tuple[str, Any]) -> tuple[Any, int]:
    """Enqueue, claim, execute and complete one task; return its row and how often it ran."""
    what, recipe = outcome
    plan[:] = [(what, build_error(recipe) if what == "raise" else build_value(recipe))]
    handle = app.enqueue("fuzz.body")
    api = app.engine.worker_api
    executor = "fuzz-worker"
    records = api.claim(ClaimParams(executor, app.engine.version(), ("default",), 1))
    assert [r.task_id for r in records] == [handle.id]
    try:
        result = run_guarded(app.engine, records[0], executor, [])
    finally:
        runs = plan.count("ran")
        plan.clear()  # no hostile value left for hypothesis to print
    assert result is not None
    assert api.complete(CompleteParams(executor, (result,))) == [handle.id]
    assert api.claim(ClaimParams(executor, app.engine.version(), ("default",), 1)) == []  # not given back
    return app.engine.get_task(handle.id), runs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outcome=outcomes)
def test_any_outcome_ends_the_task_once(fuzz_app: tuple[App, list[Any]], outcome: tuple[str, Any]) -> None:
    app, plan = fuzz_app
    record, runs = run_once(app, plan, outcome)
    assert runs == 1
    assert record.status in (Status.SUCCESS, Status.ERROR), record
    if record.status is Status.ERROR:
        error = json.loads(record.error)
        assert error["type"] and isinstance(error["message"], str) and len(error["message"]) < 70_000
        assert isinstance(decode_exception(record.error, app.engine.trusted_modules()), BaseException)
        if outcome[0] == "return":  # the value could not be recorded: the reason says so
            assert error["type"] in ("SerializationError", "PayloadTooLarge"), error
            assert "return value of task 'fuzz.body'" in error["message"], error
    else:
        assert outcome[0] == "return"
        value = app.engine.codec.loads(record.serialization, record.output)
        if outcome[1][0] in ("int", "nested"):
            assert value == build_value(outcome[1])


@given(recipe=error_recipes)
@settings(max_examples=60, deadline=None)
def test_encode_exception_never_raises(recipe: tuple[Any, ...]) -> None:
    error = build_error(recipe)
    text = encode_exception(error)
    data = json.loads(text)
    assert data["type"] == type(error).__qualname__
    assert len(text) < 300_000


def test_a_hostile_str_is_named_in_the_stored_message() -> None:
    data = json.loads(encode_exception(hostile_exception("__str__", RuntimeError, ValueError)))
    assert data["message"] == "<message not recorded: str() of the HostileValueError raised RuntimeError>"
    assert data["traceback"]


def test_pickle_of_a_hostile_reduce_is_a_serialization_error(tmp_path: Path) -> None:
    app = App(
        "p",
        database_url=f"sqlite:///{tmp_path / 'p.sqlite3'}",
        serializer="pickle",
        accept_content=["pickle"],
    )
    with pytest.raises(SerializationError, match="cannot be serialized as pickle: KeyError"):
        app.engine.codec.dumps(BadReduce(KeyError), "value")
    app.close()
