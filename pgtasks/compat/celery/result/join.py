"""Celery's ``allow_join_result`` and ``denied_join_result`` (``celery.result``): whether a task
may wait for another's result (``result.get()`` in a worker's task is refused by default)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from pgtasks.compat.celery._state import joins_allowed

__all__ = ["allow_join_result", "denied_join_result"]


def allow_join_result() -> AbstractContextManager[None]:
    """Inside the block, a task may wait for another's result."""
    return joins_allowed(True)


def denied_join_result() -> AbstractContextManager[None]:
    """Inside the block, ``result.get()`` is refused, in a task or not (as Celery's: an eager
    ``apply_async`` runs its task in one), until an ``allow_join_result()`` inside it."""
    return joins_allowed(False)
