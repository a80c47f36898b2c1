"""Celery's ``celery.app.routes``: ``task_routes``, which queue a task goes to, as Celery decides it.

A router is a mapping (exact task names, glob patterns such as ``'feed.tasks.*'``, or compiled
regular expressions as keys; a route is a queue name or a dict with ``queue``), a list of
``(key, route)`` pairs (the same keys, the patterns tried in the list's order), a function
``route(name, args, kwargs, options, task=None, **kw)`` returning a route or None, or the
import path of such a function. ``task_routes`` is one router or a list of them; the first
that answers wins. Options given to ``apply_async`` (and the task's own ``queue``) win over
a route, and without any the task goes to ``task_default_queue``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pgtasks.compat.kombu.utils.imports import symbol_by_name
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.settings import validate_queue_name

Route = dict[str, Any]
RouterFunction = Callable[..., Any]


def expand_route(route: Any) -> Route | None:
    """A route as a dict of options: a queue name becomes ``{'queue': name}``; a kombu
    ``Queue`` becomes ``{'queue': its name}``."""
    if route is None:
        return None
    if isinstance(route, str):
        return {"queue": route}
    if isinstance(route, Mapping):
        expanded = dict(route)
        queue = expanded.get("queue")
        if queue is not None and not isinstance(queue, str):
            expanded["queue"] = getattr(queue, "name", queue)
        return expanded
    name = getattr(route, "name", None)
    if isinstance(name, str):
        return {"queue": name}
    raise ConfigurationError(f"a task route must be a queue name or a dict, not {route!r}")


class MapRoute:
    """A mapping router: exact names first, then glob and regular-expression patterns in order."""

    def __init__(self, mapping: Mapping[Any, Any] | Sequence[Any]) -> None:
        self.exact: dict[str, Any] = {}
        self.patterns: list[tuple[re.Pattern[str], Any]] = []
        for key, route in mapping.items() if isinstance(mapping, Mapping) else _pairs(mapping):
            if isinstance(key, re.Pattern):
                self.patterns.append((key, route))
            elif isinstance(key, str) and "*" in key:
                # Celery's rule: a key with a '*' is an fnmatch glob ('?' and '[..]' are
                # wildcards in it too); a key without one is a name, '?' and '[' included
                self.patterns.append((re.compile(fnmatch.translate(key)), route))
            elif isinstance(key, str):
                self.exact[key] = route
            else:
                raise ConfigurationError(f"task_routes keys are task names or patterns, not {key!r}")

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Route | None:
        if name in self.exact:
            return expand_route(self.exact[name])
        for pattern, route in self.patterns:
            if pattern.match(name):
                return expand_route(route)
        return None


def _pairs(entries: Sequence[Any]) -> list[tuple[Any, Any]]:
    """A router given as a list of ``(key, route)`` pairs, as Celery's docs order glob routes."""
    pairs = []
    for entry in entries:
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise ConfigurationError(
                "a task_routes router given as a list holds (task name or pattern, route) pairs, "
                f"not {entry!r}"
            )
        pairs.append((entry[0], entry[1]))
    return pairs


def _router(value: Any) -> RouterFunction:
    if isinstance(value, (Mapping, list, tuple)):
        return MapRoute(value)
    if isinstance(value, str):
        value = symbol_by_name(value)
        if isinstance(value, type):
            value = value()
    if callable(value):
        router: RouterFunction = value  # a user's function: Celery calls it with any arguments
        return router
    route_for_task = getattr(value, "route_for_task", None)  # Celery's old class-based routers
    if callable(route_for_task):
        return lambda name, args, kwargs, options, task=None, **kw: route_for_task(name, args, kwargs)
    raise ConfigurationError(
        f"task_routes entries are dicts, lists of pairs, functions or import paths, not {value!r}"
    )


def prepare_routers(task_routes: Any) -> list[RouterFunction]:
    """``task_routes`` (None, one router, or a list or tuple of routers) as router functions."""
    if task_routes is None:
        return []
    if isinstance(task_routes, (list, tuple)):
        return [_router(r) for r in task_routes]
    return [_router(task_routes)]


def _call_router(
    router: RouterFunction,
    name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
    task: Any,
) -> Any:
    if isinstance(router, MapRoute):
        return router(name)
    try:
        return router(name, args, kwargs, options, task=task)
    except TypeError as exc:
        if "task" not in str(exc):
            raise
        return router(name, args, kwargs, options)  # a router without the task= keyword


def route(
    routers: Sequence[RouterFunction],
    name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
    default_queue: str,
    task: Any = None,
) -> dict[str, Any]:
    """The options to send with: the first router's route, under the explicit ``options``
    (those that are not None), with ``queue`` always set: the default queue when none (or
    ``''``) is given, else a valid queue name (ConfigurationError names one that is not)."""
    explicit = {k: v for k, v in options.items() if v is not None}
    chosen: dict[str, Any] = {}
    for router in routers:
        found = expand_route(_call_router(router, name, args, kwargs, options, task))
        if found:
            chosen = found
            break
    merged = {**chosen, **explicit}
    queue = merged.get("queue")
    if queue is None or queue == "":  # as Celery: an empty name is the default queue
        merged["queue"] = default_queue
    else:  # a name or a kombu Queue; anything else (5) is refused, never sent elsewhere
        merged["queue"] = validate_queue_name(
            queue if isinstance(queue, str) else getattr(queue, "name", queue)
        )
    return merged
