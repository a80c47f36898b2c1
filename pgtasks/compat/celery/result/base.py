"""Celery's ``celery.result.ResultBase``: the base class of every result."""

from __future__ import annotations

from typing import Any

from pgtasks.compat.celery.result.promise import Promise

__all__ = ["ResultBase"]


class ResultBase:
    """Base class for results."""

    parent: Any = None
    # Sent with ignore_result: Celery stores nothing, and get() returns None at once.
    ignored: bool = False
    _on_ready: Promise | None = None

    @property
    def on_ready(self) -> Promise:
        """The promise fulfilled with this result once it is ready (see ``then``)."""
        if self._on_ready is None:
            self._on_ready = Promise()
        return self._on_ready
