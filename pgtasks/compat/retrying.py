"""``Task.retry`` and ``autoretry_for``, with Celery's defaults and limits.

In a worker, ``retry()`` raises :class:`~pgtasks.compat.exceptions.Retry`; the task's entry
turns it into the engine's durable retry (same task id, ``retries + 1``, DELAYED for the
countdown; its state reads RETRY meanwhile). In ``apply()`` / eager mode the retry runs at
once in this process, as in Celery.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgtasks.compat.exceptions import Retry

if TYPE_CHECKING:
    from pgtasks.compat.task import Task

log = logging.getLogger("pgtasks.compat")


def exponential_backoff(factor: float, retries: int, maximum: float, full_jitter: bool) -> float:
    """Celery's ``retry_backoff`` countdown: ``factor * 2**retries`` capped at ``maximum``,
    then (with jitter) a random whole number of seconds from 0 to that."""
    countdown: float = min(maximum, factor * (2**retries))  # int ** int is typed Any
    if full_jitter:
        countdown = random.randrange(int(countdown) + 1)
    return max(0, countdown)


def retry(
    task: Task,
    args: Any = None,
    kwargs: Any = None,
    exc: BaseException | None = None,
    throw: bool = True,
    eta: dt.datetime | None = None,
    countdown: float | None = None,
    max_retries: int | None = None,
    **options: Any,
) -> Retry:
    """Celery's ``self.retry(...)`` (see the module docstring)."""
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
    request._pending_retry = ret  # type: ignore[attr-defined]  # raised when the body returns
    return ret


def with_autoretry(task: Task, run: Callable[..., Any]) -> Callable[..., Any]:
    """``run`` retrying on ``autoretry_for`` exceptions (not on ``dont_autoretry_for``), with
    ``retry_kwargs`` and the ``retry_backoff`` countdown, as Celery's autoretry does."""
    autoretry_for = tuple(task.autoretry_for or ())
    if not autoretry_for:
        return run
    dont = tuple(task.dont_autoretry_for or ())

    @functools.wraps(run)
    def run_with_autoretry(*args: Any, **kwargs: Any) -> Any:
        try:
            return run(*args, **kwargs)
        except Retry:
            raise
        except dont:
            raise
        except autoretry_for as exc:
            retry_kwargs = dict(task.retry_kwargs or {})
            if task.retry_backoff:
                retry_kwargs["countdown"] = exponential_backoff(
                    factor=int(max(1.0, float(task.retry_backoff))),
                    retries=task.request.retries,
                    maximum=task.retry_backoff_max,
                    full_jitter=task.retry_jitter,
                )
            raise task.retry(exc=exc, **retry_kwargs) from exc

    return run_with_autoretry
