"""Periodic tasks: on the App, ``app.schedule`` (stored at once) and schedule sources
(schedules declared in code, synced when a beat starts); on App and Client, the runtime
management of the stored schedules (list, pause, resume, delete, trigger, backfill)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.result import AsyncResult
from pgtasks.scheduler import admin
from pgtasks.scheduler.definitions import (
    DEFAULT_BACKFILL_WINDOW,
    ScheduleDefinition,
    config_source,
    define_schedule,
    task_name_of,
)
from pgtasks.scheduler.live import LiveSource
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleStatus

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine

ScheduleSource = Callable[[], Iterable[ScheduleDefinition]]


class ScheduleManagement:
    """Managing the stored schedules at runtime, on App and Client (through
    ``TaskManagement``): running beats pick every change up within a tick. Needs
    ``self.engine``."""

    engine: Engine

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


class Scheduling:
    """Mixed into App. ``timezone`` (default UTC) is the default zone of ``app.schedule``."""

    engine: Engine
    main: str | None
    timezone: str = "UTC"
    _schedule_sources: list[ScheduleSource]  # set by App.__init__

    @property
    def zone_name(self) -> str:
        """The name of the default zone of ``app.schedule``: ``timezone``."""
        return self.timezone

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
            timezone=self.zone_name if timezone is None else timezone,
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

    def add_schedule_source(self, source: ScheduleSource) -> ScheduleSource:
        """Register ``source``, a function returning schedule definitions
        (:func:`pgtasks.scheduler.define_schedule`) declared in code; returns it, so it can be
        used as a decorator. When a beat starts (``pgtasks beat``, ``pgtasks worker -B``) it
        calls every source and syncs their schedules into the database as this app's
        configured ones (source ``config:<main>``): new ones are added, changed ones updated,
        and ones no source returns any more become INACTIVE. This is the one hook other
        schedule formats (the Celery layer's ``beat_schedule``) feed the scheduler through."""
        self._schedule_sources.append(source)
        return source

    def live_schedule_sources(self) -> list[LiveSource]:
        """Sources whose schedules change while a beat runs (stored data, such as
        django-celery-beat's periodic tasks for a Celery app that uses its DatabaseScheduler):
        a beat follows each one (:mod:`pgtasks.scheduler.live`). None for a pgtasks App."""
        return []

    @property
    def beat_source(self) -> str:
        """The source the schedules of this app's schedule sources are stored under
        (``config:<main>``)."""
        return config_source(self.main)

    def beat_definitions(self) -> list[ScheduleDefinition]:
        """Every schedule of every registered source, as this app's configured schedules."""
        definitions = []
        for each in self._schedule_sources:
            for definition in each():
                if not isinstance(definition, ScheduleDefinition):
                    raise ConfigurationError(
                        f"schedule source {getattr(each, '__qualname__', each)!r} returned {definition!r}, "
                        "not a definition made by pgtasks.scheduler.define_schedule"
                    )
                definitions.append(dataclasses.replace(definition, source=self.beat_source))
        return definitions


def _task_queue(task: Any) -> str | None:
    definition = getattr(task, "definition", None)
    return getattr(definition, "queue", None)
