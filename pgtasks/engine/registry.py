"""The registry of an application's tasks, and the application version derived from them."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pgtasks.engine.errors import ConfigurationError, TaskNotRegistered
from pgtasks.engine.settings import check_name_length, validate_queue_name

MAX_ATTEMPTS_LIMIT = 2**31 - 1  # the largest max_recovery_attempts a row holds


@dataclass(frozen=True, slots=True)
class TaskDefinition:
    """A registered task: its name, function and defaults for enqueueing."""

    name: str
    fn: Callable[..., Any]
    queue: str | None = None
    max_recovery_attempts: int = 100
    options: dict[str, Any] = field(default_factory=dict)


def refuse_async_generator(fn: Callable[..., Any], what: str) -> None:
    """Refuse an async generator as a task or step (its values cannot be one result), at
    decoration time, so the mistake shows at import. ``async def`` functions are accepted."""
    target = inspect.unwrap(fn)
    if inspect.isasyncgenfunction(target):
        name = getattr(target, "__qualname__", repr(target))
        raise ConfigurationError(
            f"{what} {name} is an async generator: a task or step returns one value; return a list"
        )


def check_task_options(fn: object, name: object, queue: object, max_recovery_attempts: object) -> None:
    """Refuse, as the task is declared, what every send of it would refuse (or what would make
    no task at all): the error then points at the decorator, not at each ``delay()``."""
    if not callable(fn):
        raise ConfigurationError(f"@app.task decorates a function, not {fn!r}")
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigurationError(f"task name must be a non-empty string, not {name!r}")
    label = f"task {name or getattr(fn, '__qualname__', fn)!r}"
    if queue is not None:
        try:
            validate_queue_name(queue)  # type: ignore[arg-type]
        except ConfigurationError as exc:
            raise ConfigurationError(f"{label}: {exc}") from None
    attempts = max_recovery_attempts
    if attempts is not None and (
        isinstance(attempts, bool) or not isinstance(attempts, int) or not 0 <= attempts <= MAX_ATTEMPTS_LIMIT
    ):
        raise ConfigurationError(
            f"{label}: max_recovery_attempts must be an integer from 0 to {MAX_ATTEMPTS_LIMIT}, "
            f"not {attempts!r}"
        )


def is_async(fn: Callable[..., Any]) -> bool:
    """True for an ``async def`` function (possibly wrapped)."""
    return inspect.iscoroutinefunction(inspect.unwrap(fn))


class Registry:
    """Task definitions by name. Belongs to one App (or is empty, for a Client)."""

    def __init__(self) -> None:
        self._tasks: dict[str, TaskDefinition] = {}

    def add(self, definition: TaskDefinition) -> None:
        check_name_length(definition.name, "task name")
        existing = self._tasks.get(definition.name)
        if (
            existing is not None
            and existing.fn is not definition.fn
            and _source_key(existing.fn) != _source_key(definition.fn)
        ):
            raise ConfigurationError(
                f"task name {definition.name!r} is already registered by "
                f"{existing.fn.__module__}.{existing.fn.__qualname__}"
            )
        self._tasks[definition.name] = definition

    def get(self, name: str) -> TaskDefinition:
        try:
            return self._tasks[name]
        except KeyError:
            known = ", ".join(sorted(self._tasks)) or "none"
            raise TaskNotRegistered(
                f"task {name!r} is not registered in this process (registered: {known}); "
                "import the module that defines it in the worker (-A / include)"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._tasks

    def __iter__(self) -> Iterator[TaskDefinition]:
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def modules(self) -> set[str]:
        """Modules that define registered tasks: trusted when rebuilding exceptions."""
        return {d.fn.__module__ for d in self._tasks.values()}

    def version(self) -> str:
        """A hash of every registered task's name and source code."""
        digest = hashlib.md5(usedforsecurity=False)
        for name in sorted(self._tasks):
            digest.update(name.encode())
            digest.update(_source_key(self._tasks[name].fn).encode())
        return digest.hexdigest()


def _source_key(fn: Callable[..., Any]) -> str:
    target = inspect.unwrap(fn)
    try:
        return inspect.getsource(target)
    except (OSError, TypeError):
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}"
