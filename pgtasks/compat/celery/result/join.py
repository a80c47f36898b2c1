"""Celery's ``allow_join_result`` and ``denied_join_result`` (``celery.result``): whether a task
may wait for another's result (``result.get()`` in a task is refused by default)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from pgtasks.compat.celery._state import joins_allowed

__all__ = ["allow_join_result", "denied_join_result"]


def allow_join_result() -> AbstractContextManager[None]:
    """Inside the block, a task may wait for another's result."""
    return joins_allowed(True)


def denied_join_result() -> AbstractContextManager[None]:
    """The default again inside an allowed block."""
    return joins_allowed(False)
