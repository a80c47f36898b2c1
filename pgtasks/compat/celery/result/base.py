"""Celery's ``celery.result.ResultBase``: the base class of every result."""

from __future__ import annotations

import sys
from typing import Any

from pgtasks.compat.celery.result.promise import Promise

__all__ = ["ResultBase"]


def picklable_class(cls: type[Any]) -> type[Any]:
    """``cls``, or the nearest of its bases that pickle finds by name: the classes that
    ``app.AsyncResult``, ``app.GroupResult`` and ``app.ResultSet`` make for an app are not."""
    for klass in cls.__mro__:
        module = sys.modules.get(klass.__module__)
        if module is not None and getattr(module, klass.__qualname__, None) is klass:
            found: type[Any] = klass
            return found
    return cls


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
