"""Celery's ``beat_schedule`` entries as the native scheduler's definitions (the Celery app's
schedule source, synced when a beat starts).

An entry is ``{"task": name, "schedule": crontab(...) | schedule(...) | solar(...) | timedelta
| seconds | "cron string", "args": (...), "kwargs": {...}, "options": {"queue": ...,
"priority": ..., "expires": ...}}``; pgtasks also reads ``automatic_backfill`` and
``backfill_window`` from the entry or its options. Other Celery options (exchange,
routing_key, ...) are ignored.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.app.routes import route
from pgtasks.compat.celery.schedules import beat_seconds, crontab, schedule, solar
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.definitions import (
    DEFAULT_BACKFILL_WINDOW,
    ScheduleDefinition,
    define_schedule,
    task_name_of,
)
from pgtasks.scheduler.zones import load_zone

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

ENTRY_KEYS = frozenset(
    {"task", "schedule", "args", "kwargs", "options", "relative", "automatic_backfill", "backfill_window"}
)


def timing_arguments(value: Any, timezone: str) -> dict[str, Any]:
    """The ``define_schedule`` arguments for a Celery schedule value."""
    if isinstance(value, crontab):
        return {"cron": value.cron_expression, "day_and": value.day_and, "timezone": timezone}
    if isinstance(value, schedule):
        return {"every": value.fire_seconds}
    if isinstance(value, solar):
        return {"solar": (value.event, value.lat, value.lon)}
    if isinstance(value, (dt.timedelta, int, float)) and not isinstance(value, bool):
        return {"every": beat_seconds(value)}
    if isinstance(value, str):
        return {"cron": value, "timezone": timezone}
    raise ConfigurationError(
        f"unsupported schedule {value!r}: use crontab(...), schedule(...), solar(...), a timedelta, "
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
    options = entry_options(key, entry)
    args, kwargs = entry_arguments(key, entry)
    try:
        return define_schedule(
            key,
            task_name_of(entry["task"]),
            **timing_arguments(entry["schedule"], timezone),
            args=args,
            kwargs=kwargs,
            queue=options.get("queue"),
            priority=options.get("priority") or 0,
            expires=options.get("expires"),
            automatic_backfill=_setting(entry, options, "automatic_backfill", False),
            backfill_window=_setting(entry, options, "backfill_window", DEFAULT_BACKFILL_WINDOW),
            source=source,
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"beat_schedule[{key!r}]: {exc}") from None


def entry_arguments(key: str, entry: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The ``args`` (a list or tuple) and ``kwargs`` (a dict) of one ``beat_schedule`` entry;
    ConfigurationError names the entry and what is wrong."""
    args, kwargs = entry.get("args") or (), entry.get("kwargs") or {}
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise ConfigurationError(
            f"beat_schedule[{key!r}]: args must be a list or tuple, not {type(args).__name__}"
        )
    if not isinstance(kwargs, Mapping):
        raise ConfigurationError(
            f"beat_schedule[{key!r}]: kwargs must be a dict, not {type(kwargs).__name__}"
        )
    return tuple(args), dict(kwargs)


def entry_options(key: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The ``options`` (a dict) of one ``beat_schedule`` entry; ConfigurationError otherwise."""
    options = entry.get("options") or {}
    if not isinstance(options, Mapping):
        raise ConfigurationError(
            f"beat_schedule[{key!r}]: options must be a dict, not {type(options).__name__}"
        )
    return dict(options)


def _setting(entry: Mapping[str, Any], options: Mapping[str, Any], key: str, default: Any) -> Any:
    return entry.get(key, options.get(key, default))


def definitions_from_config(
    beat_schedule: Mapping[str, Any], timezone: str, source: str
) -> list[ScheduleDefinition]:
    """Every entry of a ``beat_schedule`` mapping, owned by ``source`` (``config:<app>``)."""
    if not isinstance(beat_schedule, Mapping):
        raise ConfigurationError(f"beat_schedule must be a dict, not {type(beat_schedule).__name__}")
    return [definition_from_entry(str(key), entry, timezone, source) for key, entry in beat_schedule.items()]


def add_entry(
    beat_schedule: MutableMapping[str, Any],
    schedule: Any,
    sig: Any,
    args: Any,
    kwargs: Any,
    name: str | None,
    opts: dict[str, Any],
) -> str:
    """Celery's ``add_periodic_task``: add an entry for ``sig`` to ``beat_schedule``; return its key."""
    task = task_name_of(sig)
    args = tuple(args or getattr(sig, "args", ()) or ())
    kwargs = dict(kwargs or getattr(sig, "kwargs", {}) or {})
    options = {**(getattr(sig, "options", None) or {}), **opts}
    key = name or f"{task}{args!r}"
    entry: dict[str, Any] = {"task": task, "schedule": schedule, "args": args, "kwargs": kwargs}
    if options:
        entry["options"] = options
    beat_schedule[key] = entry
    return key


def entry_queue(
    app: Celery, name: str, args: Sequence[Any], kwargs: Mapping[str, Any], options: Mapping[str, Any]
) -> str:
    """The queue a periodic task goes to, as Celery sends it: the queue its options name, else
    the task's own, else its route (``task_routes``), else ``task_default_queue``."""
    task = app._registry.get(name)
    base = {"queue": getattr(task, "queue", None), "priority": getattr(task, "priority", None)}
    given = {k: v for k, v in options.items() if v is not None}
    default = app.conf.task_default_queue
    routed = route(app.routers, name, tuple(args), dict(kwargs), {**base, **given}, default, task)
    return str(routed["queue"])


def definitions_for_app(app: Celery) -> list[ScheduleDefinition]:
    """The Celery app's ``beat_schedule`` in its ``timezone``, each entry routed by
    ``task_routes`` when its options name no queue (the app's schedule source)."""
    if not isinstance(app.beat_schedule, Mapping):
        raise ConfigurationError(f"beat_schedule must be a dict, not {type(app.beat_schedule).__name__}")
    for key, entry in app.beat_schedule.items():
        if isinstance(entry, dict) and "task" in entry:
            options = entry_options(str(key), entry)
            if options.get("queue") is None:
                name = task_name_of(entry["task"])
                args, kwargs = entry_arguments(str(key), entry)
                options["queue"] = entry_queue(app, name, args, kwargs, options)
                entry["options"] = options
    load_zone(app.zone_name)
    return definitions_from_config(app.beat_schedule, app.zone_name, app.beat_source)
