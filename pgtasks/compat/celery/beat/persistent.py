"""Celery's ``celery.beat.PersistentScheduler``, for code that names or subclasses it."""

from __future__ import annotations

from pgtasks.compat.celery.beat.scheduler import Scheduler

__all__ = ["PersistentScheduler"]


class PersistentScheduler(Scheduler):
    """Celery's shelve-backed scheduler. ``pgtasks beat`` keeps schedule state in the
    database and does not read a schedule file; driven by hand, this keeps its entries in
    memory as the base :class:`Scheduler` does."""
