"""``Task.retry`` on pgtasks: the :class:`~celery.exceptions.Retry` a retry raises, with
Celery's defaults and limits.

In a worker the task's entry (worker_entry.py) turns the Retry into the engine's durable retry
(same task id, ``retries + 1``, DELAYED for the countdown; its state reads RETRY meanwhile).
In ``apply()`` / eager mode the retry runs at once in this process (eager.py), as in Celery.
``retry(throw=False)`` in a worker sends the retry at once, as Celery's does, and the run goes
on to its own outcome (see :func:`send_retry`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.publishing import check_declared
from pgtasks.compat.celery.exceptions import QueueNotFound, Reject, Retry
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.options import check_priority
from pgtasks.engine.settings import validate_queue_name

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Task


def request_retry(
    task: Task,
    args: Any,
    kwargs: Any,
    exc: BaseException | None,
    throw: bool,
    eta: dt.datetime | None,
    countdown: float | None,
    max_retries: int | None,
    options: dict[str, Any],
) -> Retry:
    """What ``task.retry(...)`` does (see the module docstring): raise (or, without ``throw``,
    leave on the request for when the body returns) the Retry; past ``max_retries`` raise
    ``exc`` or MaxRetriesExceededError instead."""
    request = task.request
    if request.called_directly:
        # Celery: a task called directly cannot be retried; re-raise the reason.
        raise exc if exc is not None else Retry("Task can be retried", None)
    if eta is None and countdown is None:
        countdown = _seconds(task, "default_retry_delay", task.default_retry_delay)
    elif countdown is not None:
        countdown = _seconds(task, "countdown", countdown)
    if eta is not None:
        eta = _when(task, eta)
    limit = task.max_retries if max_retries is None else max_retries
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))):
        raise TypeError(f"max_retries of task {task.name!r} must be a number or None, not {limit!r}")
    if limit is not None and request.retries >= limit:
        if exc is not None:
            raise exc
        raise task.MaxRetriesExceededError(
            f"Can't retry {task.name}[{request.id}] args:{request.args} kwargs:{request.kwargs}",
            task_args=request.args,
            task_kwargs=request.kwargs,
        )
    if not request.is_eager:
        try:
            retry_queue(task, options.get("queue"))
            if options.get("priority") is not None:
                check_priority(options["priority"])
        except (ConfigurationError, QueueNotFound) as refused:
            # As Celery's retry when sending the retry fails: no retry is made, the task is
            # rejected for good (so no on_retry nor task_retry).
            raise Reject(refused, requeue=False) from refused
    new_args = tuple(request.args if args is None else args)
    new_kwargs = dict(request.kwargs if kwargs is None else kwargs)
    ret = Retry(
        exc=exc,
        when=eta if eta is not None else countdown,
        is_eager=request.is_eager,
        sig=(new_args, new_kwargs, options),
    )
    if throw:
        raise ret
    if request.is_eager:  # as Celery: an eager retry that does not raise is only returned
        return ret
    send_retry(task, new_args, new_kwargs, eta, countdown, options)
    return ret


def retry_queue(task: Task, queue: Any) -> str | None:
    """The name of the queue ``retry(queue=)`` gives (a name or a kombu ``Queue``; None when
    it gives none), refused as ``apply_async`` refuses it: a name no queue can have
    (ConfigurationError), one outside ``task_queues`` with ``task_create_missing_queues=False``
    (QueueNotFound)."""
    if queue is None or queue == "":
        return None
    name = validate_queue_name(queue if isinstance(queue, str) else getattr(queue, "name", queue))
    check_declared(task.app, name)
    return name


def _seconds(task: Task, what: str, value: Any) -> float | None:
    """A retry's countdown: a finite number of seconds (one in the past runs at once, as in
    Celery), else ConfigurationError naming it: it was read as 'now' before, retrying at once."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(
            f"retry of task {task.name!r}: {what} must be a number of seconds, not {value!r}"
        )
    return value


def _when(task: Task, eta: Any) -> dt.datetime:
    """A retry's ETA: a datetime, or its ISO 8601 text; else ConfigurationError naming it."""
    if isinstance(eta, dt.datetime):
        return eta
    if isinstance(eta, str):
        with contextlib.suppress(ValueError):
            return dt.datetime.fromisoformat(eta)
    raise ConfigurationError(
        f"retry of task {task.name!r}: eta must be a datetime or an ISO 8601 string, not {eta!r}"
    )


def send_retry(
    task: Task,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    eta: dt.datetime | None,
    countdown: float | None,
    options: dict[str, Any],
) -> None:
    """``retry(throw=False)`` in a worker: as in Celery, the retry is sent now and the run that
    asked goes on, its return value (or failure) being the task's outcome, which the retry
    does not overwrite. A task's row has one outcome, so the retry is a new task (its own id,
    ``retries + 1``, this task's root; as any retried run, its ``request.parent_id`` is its own
    id, as in Celery), on this task's queue with its priority and in-process errbacks."""
    request = task.request
    delivery = request.delivery_info or {}
    sent: dict[str, Any] = {"queue": delivery.get("routing_key"), "priority": delivery.get("priority")}
    if request.errbacks:
        sent["link_error"] = list(request.errbacks)
    sent.update(options)
    when: dict[str, Any] = {"eta": eta} if eta is not None else {"countdown": countdown}
    task.apply_async(args, kwargs, retries=request.retries + 1, **when, **sent)
