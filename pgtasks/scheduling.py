"""Periodic tasks on the App: ``app.schedule`` (stored at once), Celery's ``beat_schedule`` and
``add_periodic_task`` (synced when a beat starts), and runtime management of schedules."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from pgtasks.result import AsyncResult
from pgtasks.scheduler import admin
from pgtasks.scheduler.config import definitions_from_config, task_name_of
from pgtasks.scheduler.definitions import (
    DEFAULT_BACKFILL_WINDOW,
    ScheduleDefinition,
    config_source,
    define_schedule,
)
from pgtasks.scheduler.zones import load_zone
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleStatus

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


class Scheduling:
    """Mixed into App. ``timezone`` (default UTC) is the zone of ``beat_schedule`` crontabs
    and the default zone of ``app.schedule``; ``beat_schedule`` is Celery's mapping."""

    engine: Engine
    main: str | None
    timezone: str = "UTC"

    @property
    def beat_schedule(self) -> dict[str, dict[str, Any]]:
        """Celery's ``beat_schedule``: synced into the database when a beat starts."""
        return self.__dict__.setdefault("_beat_schedule", {})

    @beat_schedule.setter
    def beat_schedule(self, value: dict[str, dict[str, Any]]) -> None:
        self.__dict__["_beat_schedule"] = dict(value)

    def schedule(
        self,
        name: str,
        task: Any,
        cron: str | None = None,
        *,
        every: float | dt.timedelta | None = None,
        timezone: str | None = None,
        args: Any = (),
        kwargs: dict[str, Any] | None = None,
        queue: str | None = None,
        priority: int = 0,
        expires: float | dt.timedelta | None = None,
        automatic_backfill: bool = False,
        backfill_window: float | dt.timedelta = DEFAULT_BACKFILL_WINDOW,
    ) -> ScheduleRecord:
        """Create or update the schedule ``name`` now, in the database: ``cron`` (5 fields, or
        6 with seconds first) in ``timezone``, or ``every`` N seconds. Running beats pick it up
        within a second. An existing schedule keeps its history; a changed timing starts from
        now; a paused one stays paused."""
        definition = define_schedule(
            name,
            task_name_of(task),
            cron=cron,
            every=every,
            timezone=self.timezone if timezone is None else timezone,
            args=args,
            kwargs=kwargs,
            queue=queue if queue is not None else _task_queue(task),
            priority=priority,
            expires=expires,
            automatic_backfill=automatic_backfill,
            backfill_window=backfill_window,
        )
        [stored] = admin.store(self.engine, [definition])
        return stored

    def add_periodic_task(
        self, schedule: Any, sig: Any, args: Any = (), kwargs: Any = (), name: str | None = None, **opts: Any
    ) -> str:
        """Celery's ``app.add_periodic_task``: adds an entry to ``beat_schedule``; return its key."""
        task = task_name_of(sig)
        args = tuple(args or getattr(sig, "args", ()) or ())
        kwargs = dict(kwargs or getattr(sig, "kwargs", {}) or {})
        options = {**(getattr(sig, "options", None) or {}), **opts}
        key = name or f"{task}{args!r}"
        entry: dict[str, Any] = {"task": task, "schedule": schedule, "args": args, "kwargs": kwargs}
        if options:
            entry["options"] = options
        self.beat_schedule[key] = entry
        return key

    @property
    def beat_source(self) -> str:
        """The source of this app's ``beat_schedule`` rows (``config:<main>``)."""
        return config_source(self.main)

    def beat_definitions(self) -> list[ScheduleDefinition]:
        """The configured schedules (``beat_schedule``), validated."""
        load_zone(self.timezone)
        return definitions_from_config(self.beat_schedule, self.timezone, self.beat_source)

    def schedules_list(self, status: str | None = None) -> list[ScheduleRecord]:
        """Stored schedules by name, optionally only ACTIVE, PAUSED or INACTIVE ones."""
        return admin.listing(self.engine, status)

    def get_schedule(self, name: str) -> ScheduleRecord:
        """The stored schedule ``name`` (ConfigurationError if there is none)."""
        return admin.get(self.engine, name)

    def pause_schedule(self, name: str) -> ScheduleRecord:
        """Stop firing ``name`` until resumed."""
        return admin.set_status(self.engine, name, ScheduleStatus.PAUSED)

    def resume_schedule(self, name: str) -> ScheduleRecord:
        """Fire ``name`` again from now on (the paused time is not backfilled)."""
        return admin.set_status(self.engine, name, ScheduleStatus.ACTIVE)

    def delete_schedule(self, name: str) -> bool:
        """Delete ``name`` (its fired tasks stay); False if there was none."""
        return admin.delete(self.engine, name)

    def trigger_schedule(self, name: str) -> AsyncResult:
        """Fire ``name`` once now, outside its timing."""
        return AsyncResult(admin.trigger(self.engine, name), self.engine)

    def backfill_schedule(
        self, name: str, since: dt.datetime, until: dt.datetime | None = None
    ) -> admin.BackfillReport:
        """Fire every due time of ``name`` in ``[since, until]`` that has not fired (naive
        datetimes are UTC)."""
        return admin.backfill(self.engine, name, since, until)


def _task_queue(task: Any) -> str | None:
    definition = getattr(task, "definition", None)
    return getattr(definition, "queue", None)
