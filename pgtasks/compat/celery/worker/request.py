"""Celery's ``celery.worker.request``: the name tracing integrations import.

Celery's worker wraps each message in a :class:`Request`; a pgtasks worker reads the task's
row instead and gives the task its request as ``task.request`` (Celery's ``Context``)."""

from __future__ import annotations

from typing import Any

from pgtasks.compat.celery.app.task import Context

__all__ = ["Request"]


class Request(Context):
    """The worker's request of one task: the same fields as ``task.request``."""

    def __init__(self, message: Any = None, **fields: Any) -> None:
        super().__init__(**fields)
        self.message = message
