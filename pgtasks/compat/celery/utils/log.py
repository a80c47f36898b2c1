"""``celery.utils.log``: ``get_task_logger`` and ``get_logger``.

Task loggers are children of ``celery.task``, as in Celery, so a handler on that logger sees
every task's records."""

from __future__ import annotations

import logging

__all__ = ["LOG_LEVELS", "base_logger", "get_logger", "get_task_logger", "task_logger", "worker_logger"]

LOG_LEVELS = dict(logging._nameToLevel)
base_logger = logger = logging.getLogger("celery")
task_logger = logging.getLogger("celery.task")
worker_logger = logging.getLogger("celery.worker")


def get_logger(name: str | logging.Logger) -> logging.Logger:
    """The logger ``name`` (a logger is returned as is)."""
    return name if isinstance(name, logging.Logger) else logging.getLogger(name)


def get_task_logger(name: str) -> logging.Logger:
    """A logger for task modules, a child of ``celery.task``."""
    if name in ("celery", "celery.task"):
        raise RuntimeError(f"Logger name {name!r} is reserved!")
    log = logging.getLogger(name)
    if log.parent is logging.getLogger() or log.parent is None:
        log.parent = task_logger
    return log
