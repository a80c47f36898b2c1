"""Celery's ``celery.app.log``: :class:`TaskFormatter`, the formatter of task loggers."""

from __future__ import annotations

import logging

from pgtasks.compat.celery._state import current_request

__all__ = ["TaskFormatter"]


class TaskFormatter(logging.Formatter):
    """A formatter for task loggers: records get ``task_id`` and ``task_name`` (``???`` outside
    a task), as in Celery's ``worker_task_log_format``."""

    def format(self, record: logging.LogRecord) -> str:
        request = current_request()
        if request is not None and request.id:
            record.__dict__.setdefault("task_id", request.id)
            record.__dict__.setdefault("task_name", request.task)
        else:
            record.__dict__.setdefault("task_id", "???")
            record.__dict__.setdefault("task_name", "???")
        return super().format(record)
