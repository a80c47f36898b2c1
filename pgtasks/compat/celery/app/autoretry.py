"""Celery's ``celery.app.autoretry``: ``autoretry_for``, with ``retry_kwargs``, the
``retry_backoff`` countdown and ``retry_jitter``, as Celery's autoretry does."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.exceptions import Retry
from pgtasks.compat.celery.utils.time import get_exponential_backoff_interval

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Task

__all__ = ["add_autoretry_behaviour"]

log = logging.getLogger("pgtasks.compat")


def add_autoretry_behaviour(task: Task, **options: Any) -> None:
    """Make ``task.run`` retry on the ``autoretry_for`` exceptions (not on
    ``dont_autoretry_for``); ``options`` win over the task's attributes. Nothing changes for a
    task without ``autoretry_for``."""
    autoretry_for = _exception_classes(
        task, "autoretry_for", options.get("autoretry_for", task.autoretry_for)
    )
    if not autoretry_for:
        return
    dont = _exception_classes(
        task, "dont_autoretry_for", options.get("dont_autoretry_for", task.dont_autoretry_for)
    )
    run = task.run

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
                retry_kwargs["countdown"] = get_exponential_backoff_interval(
                    factor=int(max(1.0, float(task.retry_backoff))),
                    retries=task.request.retries,
                    maximum=task.retry_backoff_max,
                    full_jitter=task.retry_jitter,
                )
            raise task.retry(exc=exc, **retry_kwargs) from exc

    task.run = run_with_autoretry  # type: ignore[method-assign]


def _exception_classes(task: Task, option: str, value: Any) -> tuple[type[BaseException], ...]:
    """The exception classes of ``autoretry_for``/``dont_autoretry_for``. What is none (a
    string, a number) is logged and left out: in an ``except`` it raised a TypeError that took
    the place of the task's own error (Celery's too)."""
    if not value:
        return ()
    items = (value,) if isinstance(value, (str, bytes, type)) else value
    try:
        items = tuple(items)
    except TypeError:
        items = (value,)
    kept = tuple(item for item in items if isinstance(item, type) and issubclass(item, BaseException))
    if len(kept) != len(items):
        log.warning(
            "task %s: %s=%r is not a tuple of exception classes; it acts on %s only",
            task.name,
            option,
            value,
            ", ".join(k.__name__ for k in kept) or "no exception",
        )
    return kept
