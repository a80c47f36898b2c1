"""Making Celery tasks from functions: names as Celery makes them, the per-function Task
subclass (with its pgtasks entry), and shared tasks (given to every app, existing or later).
``celery.app.shared_task`` is :func:`shared_task`."""

from __future__ import annotations

import logging
import math
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.pydantic_tasks import pydantic_options, with_pydantic
from pgtasks.compat.bridge.worker_entry import worker_entry
from pgtasks.compat.celery import _state
from pgtasks.compat.celery.app.autoretry import add_autoretry_behaviour
from pgtasks.compat.celery.app.task import Task
from pgtasks.engine.registry import refuse_async_generator

log = logging.getLogger("pgtasks.compat")

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

_lock = threading.Lock()
_shared: list[tuple[Callable[..., Any], dict[str, Any], list[Task]]] = []
# The functions of ``@app.task`` (Celery's shared=True default) with their options: each app
# finalized after one was declared makes its own task of it (Celery's connect_on_app_finalize).
_made_on_finalize: list[tuple[Callable[..., Any], dict[str, Any]]] = []


def gen_task_name(main: str | None, name: str, module_name: str | None) -> str:
    """Celery's task name: ``module.function``; a task defined in the script being run
    (``__main__``) is named after the app's ``main`` instead."""
    module_name = module_name or "__main__"
    module = sys.modules.get(module_name)
    if module is not None:
        module_name = module.__name__
    if module_name == "__main__" and main:
        return f"{main}.{name}"
    return ".".join(part for part in (module_name, name) if part)


def make_task(
    fun: Callable[..., Any],
    app: Celery | None,
    base: type[Task],
    name: str,
    bind: bool = False,
    **options: Any,
) -> Task:
    """A Task subclass named after ``fun`` whose ``run`` is ``fun`` (taking ``self`` when
    ``bind``), with ``options`` as class attributes; returns its instance. With
    ``pydantic=True`` the body validates its model arguments and dumps its model result
    (pydantic_tasks.py)."""
    refuse_async_generator(fun, "task")
    typed = pydantic_options(options)
    for key in ("autoretry_for", "dont_autoretry_for"):
        value = options.get(key)
        if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
            options[key] = tuple(value)  # anything else is named when it is applied (autoretry)
    body = fun
    if typed.get("pydantic"):
        body = with_pydantic(
            fun,
            lambda: task.app,
            name,
            strict=bool(typed.get("pydantic_strict", False)),
            context=typed.get("pydantic_context"),
            dump_kwargs=typed.get("pydantic_dump_kwargs"),
        )
    run = body if bind else staticmethod(body)
    attrs: dict[str, Any] = {
        "name": name,
        "run": run,
        "_decorated": True,
        "_bound": bind,
        "__doc__": fun.__doc__,
        "__module__": fun.__module__,
        "__qualname__": getattr(fun, "__qualname__", fun.__name__),
        "__wrapped__": fun,
        "_app": app,
        **options,
    }
    cls: type[Task] = type(fun.__name__, (base,), attrs)
    task = cls()
    # As Celery's task objects, the instance looks like the function it wraps (pytest ids,
    # decorators and logging key on these); set on the instance, so no attribute binds.
    task.__name__ = fun.__name__  # type: ignore[attr-defined]
    task.__qualname__ = attrs["__qualname__"]  # type: ignore[attr-defined]
    task.__wrapped__ = fun  # type: ignore[attr-defined]
    task.__annotations__ = dict(getattr(fun, "__annotations__", {}) or {})
    add_autoretry_behaviour(task)
    task._pgtasks_entry = worker_entry(task, fun)  # type: ignore[attr-defined]
    return task


def engine_entry(task: Task) -> Callable[..., Any]:
    """The function the engine registers for ``task`` (made once per task)."""
    entry = getattr(task, "_pgtasks_entry", None)
    if entry is None:
        entry = worker_entry(task, task.run)
        task._pgtasks_entry = entry  # type: ignore[attr-defined]
    return entry


def warn_unusable_limits(task: Task) -> None:
    """Say which of the task's time limits is no number of seconds (``time_limit='x'``, -1):
    the task runs without it. Celery's prefork worker stops on the first such task."""
    for option in ("time_limit", "soft_time_limit"):
        value = getattr(task, option, None)
        if value is None or (value == 0 and not isinstance(value, bool)):  # 0: no limit, as Celery
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            log.warning(
                "task %s: %s=%r is not a number of seconds > 0; the task runs without that limit",
                task.name,
                option,
                value,
            )


# -- apps and shared tasks ---------------------------------------------------------------------
def app_created(app: Celery, set_as_current: bool) -> None:
    """Remember ``app`` (celery/_state.py); give it every shared task declared so far."""
    _state.register_app(app, set_as_current)
    with _lock:
        shared = list(_shared)
    for _fun, _options, made in shared:
        if made:
            app.register_task(made[0])


def share_with_apps_finalized_later(fun: Callable[..., Any], options: dict[str, Any]) -> None:
    """``@app.task`` without ``shared=False``: every Celery app finalized from now on makes a
    task of ``fun`` with ``options`` (its own Task subclass, bound to it, named by it)."""
    with _lock:
        _made_on_finalize.append((fun, dict(options)))


def shared_with_this_app() -> list[tuple[Callable[..., Any], dict[str, Any]]]:
    """What an app being finalized makes a task of: each ``@app.task`` function declared so
    far, with its options."""
    with _lock:
        return list(_made_on_finalize)


def shared_task(*args: Any, **kwargs: Any) -> Any:
    """``@shared_task``: a task usable with whatever app is current, registered in every app
    (those that exist and those created later)."""

    def create(fun: Callable[..., Any]) -> Task:
        options = dict(kwargs)
        existing = _state.current_app_or_none()
        # Celery builds a shared task from the Task of the app that takes it (Flask's
        # `current_app.Task = AppContextTask`); one object serves every app here: the current's.
        base = options.pop("base", None) or (existing.Task if existing is not None else Task)
        bind = options.pop("bind", False)
        for ignored in ("shared", "lazy", "filter"):
            options.pop(ignored, None)
        main = existing.main if existing is not None else None
        name = options.pop("name", None) or gen_task_name(main, fun.__name__, fun.__module__)
        task = make_task(fun, None, base, name, bind, **options)
        with _lock:
            _shared.append((fun, kwargs, [task]))
        for app in _state.active_apps():
            app.register_task(task)
        return task

    if len(args) == 1 and callable(args[0]) and not kwargs:
        return create(args[0])
    if args:
        raise TypeError("shared_task() takes a function, or only keyword arguments")
    return create
