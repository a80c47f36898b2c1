"""Celery's ``celery.app.autoretry``: ``autoretry_for``, with ``retry_kwargs``, the
``retry_backoff`` countdown and ``retry_jitter``, as Celery's autoretry does."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.exceptions import Retry
from pgtasks.compat.celery.utils.time import get_exponential_backoff_interval

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Task

__all__ = ["add_autoretry_behaviour"]


def add_autoretry_behaviour(task: Task, **options: Any) -> None:
    """Make ``task.run`` retry on the ``autoretry_for`` exceptions (not on
    ``dont_autoretry_for``); ``options`` win over the task's attributes. Nothing changes for a
    task without ``autoretry_for``."""
    autoretry_for = tuple(options.get("autoretry_for", task.autoretry_for) or ())
    if not autoretry_for:
        return
    dont = tuple(options.get("dont_autoretry_for", task.dont_autoretry_for) or ())
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
