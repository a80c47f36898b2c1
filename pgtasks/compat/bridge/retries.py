"""``Task.retry`` on pgtasks: the :class:`~celery.exceptions.Retry` a retry raises, with
Celery's defaults and limits.

In a worker the task's entry (worker_entry.py) turns the Retry into the engine's durable retry
(same task id, ``retries + 1``, DELAYED for the countdown; its state reads RETRY meanwhile).
In ``apply()`` / eager mode the retry runs at once in this process (eager.py), as in Celery.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.exceptions import Retry

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
        countdown = task.default_retry_delay
    limit = task.max_retries if max_retries is None else max_retries
    if limit is not None and request.retries >= limit:
        if exc is not None:
            raise exc
        raise task.MaxRetriesExceededError(
            f"Can't retry {task.name}[{request.id}] args:{request.args} kwargs:{request.kwargs}",
            task_args=request.args,
            task_kwargs=request.kwargs,
        )
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
    request._pending_retry = ret  # type: ignore[attr-defined]  # raised when the body returns
    return ret
