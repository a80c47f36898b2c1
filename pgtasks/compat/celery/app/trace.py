"""Celery's ``celery.app.trace``: :func:`build_tracer` and :func:`task_has_custom`.

A pgtasks worker runs each Celery task through ``build_tracer(name, task, ...)(task_id, args,
kwargs, request)``, looked up on this module at every run, as Celery's worker does. Libraries
that instrument Celery by wrapping ``celery.app.trace.build_tracer`` (sentry-sdk's
``CeleryIntegration``) therefore see every task a pgtasks worker runs, with the request dict
(``headers`` included) where they expect it.
"""

from __future__ import annotations

import time
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from pgtasks.compat.bridge.execution import trace
from pgtasks.compat.celery.app.task import Context, Task
from pgtasks.worker.logs import LOG_FAILURE, LOG_RECEIVED, LOG_RETRY, LOG_SUCCESS

__all__ = [
    "LOG_FAILURE",
    "LOG_IGNORED",
    "LOG_INTERNAL_ERROR",
    "LOG_RECEIVED",
    "LOG_REJECTED",
    "LOG_RETRY",
    "LOG_SUCCESS",
    "build_tracer",
    "task_has_custom",
    "trace_ok_t",
]

# The messages of the worker's task lines (``record.msg``; ``record.data`` holds the task's
# id, name, args and kwargs): received on ``celery.worker.strategy``, the outcome on
# ``celery.app.trace``. The last three are Celery's, for handlers that compare with them.
LOG_INTERNAL_ERROR = "Task %(name)s[%(id)s] %(description)s: %(exc)s"
LOG_IGNORED = "Task %(name)s[%(id)s] %(description)s"
LOG_REJECTED = "Task %(name)s[%(id)s] %(exc)s"

# What a tracer returns, as in Celery: ``info`` is the attempt (state, retval, einfo).
trace_ok_t = namedtuple("trace_ok_t", ("retval", "info", "runtime", "retstr"))


def task_has_custom(task: Any, attr: str) -> bool:
    """True when ``attr`` is defined by a class of ``task`` below Celery's ``Task``."""
    for cls in type(task).__mro__:
        if cls is Task or cls is object:
            return False
        if attr in cls.__dict__:
            return True
    return False


def build_tracer(
    name: str,
    task: Task,
    loader: Any = None,
    hostname: str | None = None,
    store_errors: bool = True,
    Info: Any = None,
    eager: bool = False,
    propagate: bool = False,
    app: Any = None,
    **options: Any,
) -> Callable[..., trace_ok_t]:
    """The function that runs ``task`` once: ``tracer(task_id, args, kwargs, request)``.

    ``request`` is the task's request as a dict (or a request object); the result's ``info``
    is the attempt (its Celery ``state``, ``retval`` and ``einfo``). ``propagate``: a failure
    or retry of the body is raised, before its handlers run, as Celery's eager tracer does.
    The arguments Celery's worker passes besides are accepted and have no effect."""

    def trace_task(uuid: str, args: Any, kwargs: Any, request: Any = None, **_: Any) -> trace_ok_t:
        context = request if isinstance(request, Context) else Context(**dict(request or {}))
        context.update(id=uuid, task=name)
        started = time.monotonic()
        attempt = trace(task, context, tuple(args or ()), dict(kwargs or {}), propagate=propagate)
        return trace_ok_t(attempt.retval, attempt, time.monotonic() - started, None)

    return trace_task
