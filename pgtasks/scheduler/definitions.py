"""Schedule definitions: validated when defined, stored as rows, decoded by the scheduler.

Due times are written in one canonical UTC form, ``YYYY-MM-DDTHH:MM:SSZ`` (for example
``2026-11-22T10:15:00Z``); the task fired for a due time has the id
``sched-<schedule name>-<due time>``, so firing the same due time twice inserts nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from typing import Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.settings import validate_queue_name
from pgtasks.scheduler.solar import SolarTiming
from pgtasks.scheduler.timing import CronTiming, IntervalTiming, Timing, check_interval
from pgtasks.scheduler.zones import UTC
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleWrite

DUE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
MAX_NAME_LENGTH = 200
DEFAULT_BACKFILL_WINDOW = 86_400
MAX_BACKFILL_WINDOW = 366 * 86_400
API_SOURCE = "api"


def format_due(instant: dt.datetime) -> str:
    """The canonical UTC text of a due time (whole seconds)."""
    if instant.tzinfo is None:
        raise ValueError("due times are aware datetimes")
    return instant.astimezone(UTC).strftime(DUE_FORMAT)


def parse_due(text: str) -> dt.datetime:
    """The instant of a canonical due-time text."""
    return dt.datetime.strptime(text, DUE_FORMAT).replace(tzinfo=UTC)


def fire_task_id(schedule_name: str, due: dt.datetime) -> str:
    """The deterministic id of the task fired for ``due``: ``sched-<name>-<due time>``."""
    return f"sched-{schedule_name}-{format_due(due)}"


def config_source(app_name: str | None) -> str:
    """The source of the schedules an app declares in code (its schedule sources, synced when
    a beat starts): ``config:<app>``.
    Each app owns its own entries, so two apps sharing a database never deactivate or
    overwrite each other's."""
    return f"config:{app_name or '__main__'}"


def task_name_of(task: Any) -> str:
    """A task's name: the name itself, or the ``.name`` of a task (or of a signature)."""
    if isinstance(task, str):
        return task
    name = getattr(task, "name", None)
    if isinstance(name, str) and name:
        return name
    raise ConfigurationError(f"expected a task or a task name, not {task!r}")


def check_schedule_name(name: object) -> str:
    """``name`` if it can name a schedule (and the ids of its fires); else ConfigurationError."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"schedule name must be a non-empty string, not {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigurationError(
            f"schedule name {name[:40]!r}... is longer than {MAX_NAME_LENGTH} characters"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ConfigurationError(f"schedule name {name!r} contains control characters")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(f"schedule name {name!r} is not valid Unicode (a lone surrogate)") from None
    return name  # "sched-" + 200 characters + "-" + 20 stays within MAX_TASK_ID_LENGTH


@dataclass(frozen=True, slots=True)
class ScheduleDefinition:
    """One periodic task, validated: what ``app.schedule`` and schedule sources produce."""

    name: str
    task_name: str
    timing: CronTiming | IntervalTiming | SolarTiming
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue: str | None = None
    priority: int = 0
    expires: float | None = None  # seconds after the fire; then the task is cancelled unrun
    automatic_backfill: bool = False
    backfill_window: int = DEFAULT_BACKFILL_WINDOW  # seconds: how far back a backfill reaches
    source: str = API_SOURCE
    meta: dict[str, Any] | None = None  # stored with each fired task (a Celery app's headers)

    def to_write(self) -> ScheduleWrite:
        """The row to store."""
        timing = self.timing
        options: dict[str, Any] = {}
        if self.priority:
            options["priority"] = self.priority
        if self.expires is not None:
            options["expires"] = self.expires
        if self.meta:
            options["meta"] = self.meta
        return ScheduleWrite(
            name=self.name,
            task_name=self.task_name,
            schedule=timing.expression.text if isinstance(timing, CronTiming) else timing.describe(),
            timezone=timing.timezone if isinstance(timing, CronTiming) else "UTC",
            interval_seconds=timing.seconds if isinstance(timing, IntervalTiming) else None,
            day_and=timing.expression.day_and if isinstance(timing, CronTiming) else False,
            context=json.dumps({"args": list(self.args), "kwargs": self.kwargs}, sort_keys=True),
            options=json.dumps(options, sort_keys=True),
            queue_name=self.queue,
            automatic_backfill=self.automatic_backfill,
            backfill_window_seconds=self.backfill_window,
            source=self.source,
        )


def define_schedule(
    name: str,
    task_name: str,
    *,
    cron: str | None = None,
    every: float | dt.timedelta | None = None,
    solar: tuple[str, float, float] | None = None,
    timezone: str = "UTC",
    day_and: bool = False,
    args: Any = (),
    kwargs: Any = None,
    queue: str | None = None,
    priority: int = 0,
    expires: float | dt.timedelta | None = None,
    automatic_backfill: bool = False,
    backfill_window: float | dt.timedelta = DEFAULT_BACKFILL_WINDOW,
    source: str = API_SOURCE,
    meta: dict[str, Any] | None = None,
) -> ScheduleDefinition:
    """Check every part of a schedule; raise ConfigurationError naming the bad one. The timing
    is one of ``cron=`` (in ``timezone``), ``every=`` (seconds) and ``solar=(event, latitude,
    longitude)`` (:mod:`pgtasks.scheduler.solar`, needs ephem). ``meta`` (a JSON object) is
    stored with every task it fires, as a sender's metadata is."""
    check_schedule_name(name)
    if not isinstance(task_name, str) or not task_name:
        raise ConfigurationError(f"schedule {name!r}: task must be a task or a task name, not {task_name!r}")
    if [cron, every, solar].count(None) != 2:
        raise ConfigurationError(f"schedule {name!r}: give exactly one of cron=, every= and solar=")
    try:
        timing: CronTiming | IntervalTiming | SolarTiming
        if cron is not None:
            timing = CronTiming.parse(cron, timezone, day_and)
        elif solar is not None:
            timing = SolarTiming.define(*solar)
        else:
            timing = IntervalTiming(check_interval(every))
    except ConfigurationError as exc:
        raise ConfigurationError(f"schedule {name!r}: {exc}") from None
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(args, (list, tuple)):
        raise ConfigurationError(
            f"schedule {name!r}: args must be a list or tuple, not {type(args).__name__}"
        )
    if not isinstance(kwargs, dict):
        raise ConfigurationError(f"schedule {name!r}: kwargs must be a dict, not {type(kwargs).__name__}")
    try:
        json.dumps({"args": list(args), "kwargs": kwargs})
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"schedule {name!r}: args and kwargs must be JSON values: {exc}") from None
    try:
        if meta is not None and not isinstance(meta, dict):
            raise TypeError(f"not {type(meta).__name__}")
        json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"schedule {name!r}: meta must be a JSON object: {exc}") from None
    if queue is not None:
        validate_queue_name(queue)
    if isinstance(priority, bool) or not isinstance(priority, int) or not -(2**31) <= priority < 2**31:
        raise ConfigurationError(f"schedule {name!r}: priority must be a 32-bit integer, not {priority!r}")
    if not isinstance(automatic_backfill, bool):
        raise ConfigurationError(f"schedule {name!r}: automatic_backfill must be True or False")
    if source != API_SOURCE and not (isinstance(source, str) and source.startswith("config:")):
        raise ConfigurationError(f"schedule {name!r}: source must be 'api' or 'config:<app>', not {source!r}")
    return ScheduleDefinition(
        name=name,
        task_name=task_name,
        timing=timing,
        args=tuple(args),
        kwargs=dict(kwargs),
        queue=queue,
        priority=priority,
        expires=_seconds(expires, f"schedule {name!r}: expires", 1e-3, 100 * 366 * 86_400),
        automatic_backfill=automatic_backfill,
        backfill_window=int(
            _seconds(backfill_window, f"schedule {name!r}: backfill_window", 1, MAX_BACKFILL_WINDOW) or 0
        ),
        source=source,
        meta=dict(meta) if meta else None,
    )


def _seconds(value: float | dt.timedelta | None, what: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(f"{what} must be a number of seconds or a timedelta, not {value!r}")
    if not low <= value <= high:
        raise ConfigurationError(f"{what} must be between {low:g} and {high:g} seconds, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class StoredSchedule:
    """A stored schedule decoded for firing."""

    record: ScheduleRecord
    timing: Timing
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    priority: int
    expires: float | None
    meta: str | None = None  # JSON, stored with each fired task


def decode_schedule(record: ScheduleRecord) -> StoredSchedule:
    """Read a row back; ConfigurationError if it cannot be fired (written by hand, say)."""
    if record.interval_seconds is not None:
        timing: Timing = IntervalTiming.parse(check_interval(record.interval_seconds), record.schedule)
    elif record.schedule.startswith("solar "):
        timing = SolarTiming.parse(record.schedule)
    else:
        timing = CronTiming.parse(record.schedule, record.timezone, record.day_and)
    try:
        context = json.loads(record.context or "{}")
        options = json.loads(record.options or "{}")
    except ValueError as exc:
        raise ConfigurationError(f"schedule {record.name!r}: stored arguments are not JSON: {exc}") from None
    if not isinstance(context, dict) or not isinstance(options, dict):
        raise ConfigurationError(f"schedule {record.name!r}: stored context and options must be JSON objects")
    args, kwargs = context.get("args", []), context.get("kwargs", {})
    priority, expires = options.get("priority", 0), options.get("expires")
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ConfigurationError(
            f"schedule {record.name!r}: stored args must be a JSON array and kwargs an object, "
            f"not {type(args).__name__} and {type(kwargs).__name__}"
        )
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ConfigurationError(f"schedule {record.name!r}: stored priority {priority!r} is not an integer")
    if expires is not None and (isinstance(expires, bool) or not isinstance(expires, (int, float))):
        raise ConfigurationError(f"schedule {record.name!r}: stored expires {expires!r} is not a number")
    meta = options.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise ConfigurationError(f"schedule {record.name!r}: stored meta {meta!r} is not a JSON object")
    stored_meta = json.dumps(meta, sort_keys=True) if meta else None
    return StoredSchedule(record, timing, tuple(args), kwargs, priority, expires, stored_meta)
