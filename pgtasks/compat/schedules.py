"""``celery.schedules``: ``crontab``, ``schedule`` and ``solar`` (not supported: raises),
evaluated by the pgtasks scheduler (see docs/scheduling.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pgtasks.scheduler.celery_schedules import crontab, schedule, solar

__all__ = ["crontab", "maybe_schedule", "schedule", "solar"]


def maybe_schedule(s: Any, relative: bool = False, app: Any = None) -> Any:
    """A number of seconds or a timedelta as a ``schedule``; anything else as given."""
    if s is not None and not isinstance(s, bool) and isinstance(s, (int, float, dt.timedelta)):
        return schedule(s, relative)
    return s
