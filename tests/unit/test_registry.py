"""Registry: lookup errors, duplicate names and the derived application version."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import pytest

from pgtasks.engine.errors import ConfigurationError, TaskNotRegistered
from pgtasks.engine.registry import Registry, TaskDefinition


def add(a: int, b: int) -> int:
    return a + b


def mul(a: int, b: int) -> int:
    return a * b


def other_add(a: int, b: int) -> int:
    return b + a + 0


def registry_of(*pairs: tuple[str, Callable[..., Any]]) -> Registry:
    registry = Registry()
    for name, fn in pairs:
        registry.add(TaskDefinition(name, fn))
    return registry


def test_get_returns_definition() -> None:
    registry = registry_of(("tasks.add", add))
    assert registry.get("tasks.add").fn is add
    assert "tasks.add" in registry
    assert "tasks.mul" not in registry
    assert len(registry) == 1
    assert [d.name for d in registry] == ["tasks.add"]


def test_get_unknown_names_task_and_lists_registered() -> None:
    registry = registry_of(("tasks.mul", mul), ("tasks.add", add))
    with pytest.raises(TaskNotRegistered) as info:
        registry.get("tasks.sub")
    message = str(info.value)
    assert "'tasks.sub'" in message
    assert "registered: tasks.add, tasks.mul" in message
    assert isinstance(info.value, KeyError)


def test_get_unknown_on_empty_registry() -> None:
    with pytest.raises(TaskNotRegistered, match="registered: none"):
        Registry().get("x")


def test_version_is_stable_for_same_functions() -> None:
    first = registry_of(("a", add), ("m", mul)).version()
    second = registry_of(("m", mul), ("a", add)).version()
    assert first == second
    assert len(first) == 32


def test_version_changes_when_a_task_is_added() -> None:
    registry = registry_of(("a", add))
    before = registry.version()
    registry.add(TaskDefinition("m", mul))
    assert registry.version() != before


def test_version_depends_on_name_and_source() -> None:
    assert registry_of(("a", add)).version() != registry_of(("b", add)).version()
    assert registry_of(("a", add)).version() != registry_of(("a", mul)).version()


def test_same_name_for_two_functions_is_refused() -> None:
    registry = registry_of(("tasks.add", add))
    with pytest.raises(ConfigurationError) as info:
        registry.add(TaskDefinition("tasks.add", other_add))
    assert "'tasks.add'" in str(info.value)
    assert f"{__name__}.add" in str(info.value)
    assert registry.get("tasks.add").fn is add


def test_registering_same_function_again_is_allowed() -> None:
    registry = registry_of(("tasks.add", add))
    registry.add(TaskDefinition("tasks.add", add, queue="q2"))
    assert registry.get("tasks.add").queue == "q2"
    assert len(registry) == 1


def test_wrapped_function_counts_as_same_source() -> None:
    @functools.wraps(add)
    def wrapper(*args: Any) -> Any:
        return add(*args)

    registry = registry_of(("tasks.add", add))
    registry.add(TaskDefinition("tasks.add", wrapper))
    assert registry.get("tasks.add").fn is wrapper


def test_names_and_modules() -> None:
    registry = registry_of(("z", add), ("a", mul), ("b", len))
    assert registry.names() == ["a", "b", "z"]
    assert registry.modules() == {__name__, "builtins"}


@pytest.mark.parametrize(
    ("decorate", "message"),
    [
        (lambda app: app.task(5), "@app.task decorates a function, not 5"),
        (lambda app: app.task(name=123)(add), "task name must be a non-empty string, not 123"),
        (lambda app: app.task(name="t", queue=5)(add), "task 't': invalid queue name 5: 1 to 200 characters"),
        (lambda app: app.task(queue="a b")(add), "task 'add': invalid queue name 'a b': use letters"),
        (
            lambda app: app.task(name="t", max_recovery_attempts="3")(add),
            "task 't': max_recovery_attempts must be an integer from 0 to 2147483647, not '3'",
        ),
        (lambda app: app.task(name="t", max_recovery_attempts=-1)(add), "task 't': max_recovery_attempts"),
        (lambda app: app.task(name="t", max_recovery_attempts=True)(add), "task 't': max_recovery_attempts"),
        (lambda app: app.step(name=5)(add), "a step's name must be a non-empty string, not 5"),
    ],
)
def test_task_options_no_send_could_take_are_refused_at_the_decorator(
    sqlite_url: str, decorate: Callable[[Any], Any], message: str
) -> None:
    """Each was accepted (or an AttributeError/TypeError from inside pgtasks) and then refused at
    every ``delay()``, far from the line to fix."""
    from pgtasks import App

    app = App("decl", database_url=sqlite_url)
    try:
        with pytest.raises(ConfigurationError, match=f"^{re.escape(message)}"):
            decorate(app)
        assert [t.name for t in app.engine.registry] == []
    finally:
        app.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"max_recovery_attempts": "3"},
            "max_recovery_attempts must be an integer from 0 to 2147483647, not '3'",
        ),
        (
            {"max_recovery_attempts": -1},
            "max_recovery_attempts must be an integer from 0 to 2147483647, not -1",
        ),
        ({"application_version": 5}, "application_version must be a string, not 5"),
        ({"log_task_args": "no"}, "log_task_args must be True or False, not 'no'"),
    ],
)
def test_app_settings_of_the_wrong_kind_are_refused_naming_them(
    sqlite_url: str, settings: dict[str, Any], message: str
) -> None:
    """max_recovery_attempts='3' was "'<' not supported", application_version=5 "object of type
    'int' has no len()", and log_task_args='no' turned argument logging on."""
    from pgtasks import App

    with pytest.raises(ConfigurationError, match=f"^{re.escape(message)}$"):
        App("decl", database_url=sqlite_url, **settings)


def test_app_settings_read_from_the_environment_are_taken(sqlite_url: str) -> None:
    """log_task_args given 0 or 1 (an environment variable read as int) and an empty
    application_version (an unset variable's default) are taken, as before the checks."""
    from pgtasks import App

    assert App("env", database_url=sqlite_url, log_task_args=1).settings.log_task_args == 1
    assert (
        App("env", database_url=sqlite_url, log_task_args=0, application_version="").settings.log_task_args
        == 0
    )
