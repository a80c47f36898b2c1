"""django-celery-beat's periodic tasks, fired by ``pgtasks beat`` when a Celery app sets
``beat_scheduler = "django_celery_beat.schedulers:DatabaseScheduler"``.

The ``PeriodicTask`` rows (edited in Django's admin or in code) are a live schedule source
(:mod:`pgtasks.scheduler.live`): each enabled row with an interval, crontab or solar schedule
becomes a pgtasks schedule of the same name, stored under the source
``config:django_celery_beat``, and fires exactly once per due time however many beats run.
An edit, a disabled or deleted row, a start time reached or an expiry passed is picked up
within a second (``PeriodicTasks.last_update`` changes with every save; the rows past their
start or expiry are counted), and every row at least once a minute. An interval row fires
every period after its ``last_run_at`` (its ``start_time`` or ``date_changed`` until it first
ran), as django-celery-beat anchors it, so a beat started again fires it neither early nor
twice. A clocked one-off row is sent once, at its time, and then disabled, as
django-celery-beat does.

As django-celery-beat's own scheduler: each fired task carries the row's ``headers`` and the
``periodic_task_name`` header (``self.request.periodic_task_name``); the beat that fired a row
keeps its ``last_run_at`` and ``total_run_count``; a ``one_off`` row is disabled after its
first fire; the ``celery.backend_cleanup`` row (daily at 4:00, pgtasks' retention) is created
when ``result_expires`` is set, as Celery's beat creates it; the app's ``beat_schedule``
entries are written as rows when a beat starts, as django-celery-beat's scheduler writes them
(so they fire from the rows, once). Solar rows fire at their event (with the ephem package
installed, as Celery requires; without it an error names the row and the package).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.beat_schedule import definition_from_entry, entry_queue
from pgtasks.compat.celery.schedules import crontab
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.definitions import ScheduleDefinition, define_schedule, fire_task_id
from pgtasks.scheduler.live import LiveSource
from pgtasks.scheduler.solar import SolarTiming
from pgtasks.scheduler.timing import IntervalTiming

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

log = logging.getLogger("pgtasks.beat")

SOURCE = "config:django_celery_beat"  # its rows, apart from any app's beat_schedule
CLEANUP = "celery.backend_cleanup"
SECONDS = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0, "microseconds": 1e-6}


def uses_django_beat(app: Celery) -> bool:
    """Whether the app's ``beat_scheduler`` is django-celery-beat's DatabaseScheduler."""
    return "django_celery_beat" in str(app.conf.get("beat_scheduler") or "")


def live_source(app: Celery) -> LiveSource:
    """The app's periodic tasks as a live schedule source."""
    reader = PeriodicTaskReader(app)
    return LiveSource(SOURCE, reader.definitions, _last_change, reader.fired)


def _last_change() -> object:
    """What changes when the rows to fire may have: the last save or delete, and how many
    enabled rows have reached their ``start_time`` or ``expires`` (so a row starts within a
    second of its start time, not at the next minute's resync)."""
    # why: django_celery_beat's models import only after django.setup(), which the command
    # that loaded the app has run; never at the import of this module.
    from django.db.models import Q
    from django.utils import timezone
    from django_celery_beat.models import PeriodicTask, PeriodicTasks

    now = timezone.now()
    reached = PeriodicTask.objects.filter(enabled=True).filter(Q(start_time__lte=now) | Q(expires__lte=now))
    return (PeriodicTasks.last_change(), reached.count())


class PeriodicTaskReader:
    """Reads the enabled ``PeriodicTask`` rows into schedule definitions; sends clocked ones."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self._reported: set[tuple[str, str]] = set()
        self._defaults_installed = False

    def definitions(self) -> list[ScheduleDefinition]:
        # why: see _last_change
        from django.utils import timezone
        from django_celery_beat.models import PeriodicTask

        if not self._defaults_installed:
            self._defaults_installed = True
            self._install_default_entries()
        now = timezone.now()
        found = []
        enabled = PeriodicTask.objects.filter(enabled=True)
        rows = enabled.select_related("interval", "crontab", "solar", "clocked")
        for row in rows:
            try:
                definition = self._definition(row, now)
            except ConfigurationError as exc:
                self._report(row.name, str(exc))
                continue
            if definition is not None:
                found.append(definition)
        return found

    def _definition(self, row: Any, now: dt.datetime) -> ScheduleDefinition | None:
        if row.start_time is not None and row.start_time > now and row.interval_id is None:
            return None  # not yet: the resync after its start time adds it
        if row.expires is not None and row.expires <= now:
            return None
        args, kwargs = _loaded(row.args, "args", list), _loaded(row.kwargs, "kwargs", dict)
        options = {"queue": row.queue or None, "priority": row.priority}
        if row.clocked_id is not None:
            self._send_clocked(row, args, kwargs, options)
            return None
        if row.interval_id is not None:
            timing: dict[str, Any] = {"every": row.interval.every * SECONDS[row.interval.period]}
        elif row.crontab_id is not None:
            c = row.crontab
            cron = f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}"
            timing = {"cron": cron, "timezone": str(c.timezone)}
        elif row.solar_id is not None:
            timing = {"solar": (row.solar.event, float(row.solar.latitude), float(row.solar.longitude))}
        else:
            raise ConfigurationError("it has no schedule")
        definition = define_schedule(
            row.name,
            row.task,
            **timing,
            args=args,
            kwargs=kwargs,
            queue=entry_queue(self.app, row.task, args, kwargs, options),
            priority=row.priority or 0,
            expires=row.expire_seconds or None,
            source=SOURCE,
            meta={"headers": _headers(row)},
        )
        if isinstance(definition.timing, IntervalTiming):
            return dataclasses.replace(definition, timing=_anchored(row, definition.timing.seconds))
        return definition

    def _send_clocked(
        self, row: Any, args: list[Any], kwargs: dict[str, Any], options: dict[str, Any]
    ) -> None:
        """Send a clocked row once, due at its time (an id derived from the row and the time:
        every beat sends the same task), then disable it, as django-celery-beat does."""
        # why: see _last_change
        from django.db.models import F
        from django_celery_beat.models import PeriodicTask

        when = row.clocked.clocked_time
        self.app.send_task(
            row.task,
            args,
            kwargs,
            task_id=fire_task_id(row.name, when),
            eta=when,
            queue=entry_queue(self.app, row.task, args, kwargs, options),
            priority=row.priority,
            expires=row.expires,
        )
        # the first beat to get here counts the run: the others find the row disabled
        first = PeriodicTask.objects.filter(pk=row.pk, enabled=True)
        if first.update(enabled=False, last_run_at=when, total_run_count=F("total_run_count") + 1):
            log.info("sent clocked periodic task %s due %s", row.name, when.isoformat())

    def fired(self, name: str, instants: list[dt.datetime]) -> bool:
        """Record the fires of row ``name`` as django-celery-beat does: ``last_run_at`` and
        ``total_run_count`` (an update that does not count as an edit, so the beat does not
        re-read its rows for it); a ``one_off`` row is then disabled through ``save()``, which
        tells every beat. True when the row was a one-off (it fires no more)."""
        # why: see _last_change
        from django.conf import settings
        from django.db.models import F
        from django.utils import timezone
        from django_celery_beat.models import PeriodicTask

        when = instants[-1]
        if not settings.USE_TZ:
            when = timezone.make_naive(when)
        rows = PeriodicTask.objects.filter(name=name)
        rows.update(last_run_at=when, total_run_count=F("total_run_count") + len(instants))
        finished = False
        for row in rows.filter(one_off=True, enabled=True):
            row.enabled, row.total_run_count = False, 0  # as its scheduler ends a one-off
            row.save()
            finished = True
        return finished

    def _install_default_entries(self) -> None:
        """As django-celery-beat's scheduler starts: Celery's ``celery.backend_cleanup`` entry
        (daily at 4:00, when results expire), then every ``beat_schedule`` entry, written as
        rows (created, or updated by name, keeping ``enabled``), which staff then see, edit and
        disable in the admin. A bad entry is logged and skipped, as its scheduler does."""
        entries: dict[str, Any] = {}
        if self.app.conf.result_expires:
            cleanup = crontab("0", "4", "*")
            entries[CLEANUP] = {
                "task": CLEANUP,
                "schedule": cleanup,
                "options": {"expire_seconds": 12 * 3600},
            }
        entries.update(self.app.beat_schedule)
        for name, entry in entries.items():
            try:
                self._install_entry(str(name), entry)
            except (ConfigurationError, TypeError, ValueError) as exc:
                self._report(str(name), f"its beat_schedule entry cannot be written as a row: {exc}")

    def _install_entry(self, name: str, entry: Any) -> None:
        """One entry as ``PeriodicTask.update_or_create`` by name (django-celery-beat's
        ``ModelEntry.from_entry``); two beats starting together write the same row."""
        # why: see _last_change
        from django.core.exceptions import ValidationError
        from django.db import IntegrityError
        from django_celery_beat.models import PeriodicTask

        definition = definition_from_entry(name, entry, self.app.zone_name, SOURCE)  # checks the entry
        options = dict(entry.get("options") or {})
        fields: dict[str, Any] = {"interval": None, "crontab": None, "solar": None, "clocked": None}
        fields.update(self._model_schedule(definition))
        fields.update(
            task=definition.task_name,
            args=json.dumps(list(definition.args)),
            kwargs=json.dumps(definition.kwargs),
            queue=options.get("queue"),
            exchange=options.get("exchange"),
            routing_key=options.get("routing_key"),
            priority=options.get("priority"),
            headers=json.dumps(options.get("headers") or {}),
            expire_seconds=options.get("expire_seconds"),
        )
        try:
            PeriodicTask.objects.update_or_create(name=name, defaults=fields)
        except (ValidationError, IntegrityError):
            if not PeriodicTask.objects.filter(name=name).exists():
                raise  # not another beat creating it at the same time
            PeriodicTask.objects.update_or_create(name=name, defaults=fields)

    def _model_schedule(self, definition: ScheduleDefinition) -> dict[str, Any]:
        """The schedule row an entry's schedule is stored as (found, or created)."""
        # why: see _last_change
        from django_celery_beat.models import CrontabSchedule, IntervalSchedule, SolarSchedule

        timing = definition.timing
        if isinstance(timing, IntervalTiming):
            return {"interval": _first_or_new(IntervalSchedule, every=timing.seconds, period="seconds")}
        if isinstance(timing, SolarTiming):
            place = {"latitude": timing.latitude, "longitude": timing.longitude}
            return {"solar": _first_or_new(SolarSchedule, event=timing.event, **place)}
        fields = timing.expression.text.split()
        if len(fields) != 5:
            raise ConfigurationError(
                f"django-celery-beat's crontab has 5 fields, not {timing.expression.text!r}"
            )
        minute, hour, day_of_month, month_of_year, day_of_week = fields
        found = _first_or_new(
            CrontabSchedule,
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month_of_year,
            day_of_week=day_of_week,
            timezone=timing.timezone,
        )
        return {"crontab": found}

    def _report(self, name: str, problem: str) -> None:
        if (name, problem) not in self._reported:
            self._reported.add((name, problem))
            log.error("periodic task %r is not fired: %s", name, problem)


def _anchored(row: Any, seconds: int) -> IntervalTiming:
    """An interval row's instants as django-celery-beat's: every period after its
    ``last_run_at``, which is its ``start_time`` (the first fire) or ``date_changed`` until it
    first ran; none before ``start_time``."""
    anchor = row.last_run_at or row.start_time or row.date_changed
    return IntervalTiming.anchored(seconds, _aware(anchor), row.start_time and _aware(row.start_time))


def _aware(value: dt.datetime) -> dt.datetime:
    """A row's datetime, aware (a project with ``USE_TZ = False`` stores its local time)."""
    from django.utils import timezone  # why: see _last_change

    return value if timezone.is_aware(value) else timezone.make_aware(value)


def _first_or_new(model: Any, **fields: Any) -> Any:
    """The first schedule row with these fields, or a new one (two beats starting together may
    each create one, as django-celery-beat's ``from_schedule`` may: either serves)."""
    return model.objects.filter(**fields).first() or model.objects.create(**fields)


def _headers(row: Any) -> dict[str, Any]:
    """The headers a fire of ``row`` carries: its own (``headers``, JSON), then the ones
    django-celery-beat adds."""
    own = _loaded(getattr(row, "headers", None) or "{}", "headers", dict)
    return {**own, "periodic_task_name": row.name, "celery_beat_task": True}


def _loaded(text: str | None, field: str, kind: type) -> Any:
    try:
        value = json.loads(text or ("[]" if kind is list else "{}"))
    except ValueError:
        raise ConfigurationError(f"its {field} are not JSON: {text!r}") from None
    if not isinstance(value, kind):
        raise ConfigurationError(f"its {field} must be a JSON {'list' if kind is list else 'object'}")
    return value
