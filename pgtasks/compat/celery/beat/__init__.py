"""Celery's ``celery.beat``: the scheduler classes that libraries subclass (django-celery-beat's
``DatabaseScheduler`` and ``ModelEntry``) and that code drives by hand, with Celery's API and
behaviour: entry.py (``ScheduleEntry``, ``BeatLazyFunc``), scheduler.py (``Scheduler``,
``SchedulingError``), persistent.py (``PersistentScheduler``); this package re-exports them.

``pgtasks beat`` does not run these classes: it fires schedules from the database, exactly once
across beats (see docs/celery-migration.md).
"""

from __future__ import annotations

from pgtasks.compat.celery.beat.entry import BeatLazyFunc, ScheduleEntry
from pgtasks.compat.celery.beat.persistent import PersistentScheduler
from pgtasks.compat.celery.beat.scheduler import DEFAULT_MAX_INTERVAL, Scheduler, SchedulingError, event_t

__all__ = [
    "DEFAULT_MAX_INTERVAL",
    "BeatLazyFunc",
    "PersistentScheduler",
    "ScheduleEntry",
    "Scheduler",
    "SchedulingError",
    "event_t",
]
