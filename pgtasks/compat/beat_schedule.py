"""Celery's ``beat_schedule`` entries as schedule definitions (synced when a beat starts).

An entry is ``{"task": name, "schedule": crontab(...) | schedule(...) | timedelta | seconds |
"cron string", "args": (...), "kwargs": {...}, "options": {"queue": ..., "priority": ...,
"expires": ...}}``; pgtasks also reads ``automatic_backfill`` and ``backfill_window`` from the
entry or its options. Other Celery options (exchange, routing_key, ...) are ignored.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.celery_schedules import crontab, schedule
from pgtasks.scheduler.definitions import DEFAULT_BACKFILL_WINDOW, ScheduleDefinition, define_schedule

ENTRY_KEYS = frozenset(
    {"task", "schedule", "args", "kwargs", "options", "relative", "automatic_backfill", "backfill_window"}
)


def task_name_of(task: Any) -> str:
    """A task's name: the name itself, or the ``.name`` of a task or signature."""
    if isinstance(task, str):
        return task
    name = getattr(task, "name", None)
    if isinstance(name, str) and name:
        return name
    raise ConfigurationError(f"expected a task or a task name, not {task!r}")


def timing_arguments(value: Any, timezone: str) -> dict[str, Any]:
    """The ``define_schedule`` arguments for a Celery schedule value."""
    if isinstance(value, crontab):
        return {"cron": value.cron_expression, "day_and": value.day_and, "timezone": timezone}
    if isinstance(value, schedule):
        return {"every": value.seconds}
    if isinstance(value, (dt.timedelta, int, float)) and not isinstance(value, bool):
        return {"every": value}
    if isinstance(value, str):
        return {"cron": value, "timezone": timezone}
    raise ConfigurationError(
        f"unsupported schedule {value!r}: use crontab(...), schedule(...), a timedelta, "
        "a number of seconds or a cron string"
    )


def definition_from_entry(
    key: str, entry: Mapping[str, Any], timezone: str, source: str
) -> ScheduleDefinition:
    """One ``beat_schedule`` entry; ConfigurationError names the entry and the problem."""
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"beat_schedule[{key!r}] must be a dict, not {type(entry).__name__}")
    missing = {"task", "schedule"} - set(entry)
    if missing:
        raise ConfigurationError(f"beat_schedule[{key!r}] has no {' or '.join(sorted(missing))}")
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        raise ConfigurationError(f"beat_schedule[{key!r}]: unknown keys {sorted(unknown)}")
    options = dict(entry.get("options") or {})
    try:
        return define_schedule(
            key,
            task_name_of(entry["task"]),
            **timing_arguments(entry["schedule"], timezone),
            args=entry.get("args") or (),
            kwargs=entry.get("kwargs") or {},
            queue=options.get("queue"),
            priority=options.get("priority") or 0,
            expires=options.get("expires"),
            automatic_backfill=_setting(entry, options, "automatic_backfill", False),
            backfill_window=_setting(entry, options, "backfill_window", DEFAULT_BACKFILL_WINDOW),
            source=source,
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"beat_schedule[{key!r}]: {exc}") from None


def _setting(entry: Mapping[str, Any], options: Mapping[str, Any], key: str, default: Any) -> Any:
    return entry.get(key, options.get(key, default))


def definitions_from_config(
    beat_schedule: Mapping[str, Any], timezone: str, source: str
) -> list[ScheduleDefinition]:
    """Every entry of a ``beat_schedule`` mapping, owned by ``source`` (``config:<app>``)."""
    if not isinstance(beat_schedule, Mapping):
        raise ConfigurationError(f"beat_schedule must be a dict, not {type(beat_schedule).__name__}")
    return [definition_from_entry(str(key), entry, timezone, source) for key, entry in beat_schedule.items()]
