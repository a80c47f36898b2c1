"""django-celery-beat's periodic tasks, fired by ``pgtasks beat`` when a Celery app sets
``beat_scheduler = "django_celery_beat.schedulers:DatabaseScheduler"``.

The ``PeriodicTask`` rows (edited in Django's admin or in code) are a live schedule source
(:mod:`pgtasks.scheduler.live`): each enabled row with an interval or crontab schedule becomes
a pgtasks schedule of the same name, stored under the source ``config:django_celery_beat``, and fires
exactly once per due time however many beats run. An edit, a disabled or deleted row, a start
time reached or an expiry passed is picked up within a second (``PeriodicTasks.last_update``
changes with every save) or a minute. A clocked one-off row is sent once, at its time, and
then disabled, as django-celery-beat does. Solar schedules, and ``one_off`` on an interval or
crontab row, are not fired: an error names the row.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.beat_schedule import entry_queue
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.definitions import ScheduleDefinition, define_schedule, fire_task_id
from pgtasks.scheduler.live import LiveSource

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

log = logging.getLogger("pgtasks.beat")

SOURCE = "config:django_celery_beat"  # its rows, apart from any app's beat_schedule
SECONDS = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0, "microseconds": 1e-6}


def uses_django_beat(app: Celery) -> bool:
    """Whether the app's ``beat_scheduler`` is django-celery-beat's DatabaseScheduler."""
    return "django_celery_beat" in str(app.conf.get("beat_scheduler") or "")


def live_source(app: Celery) -> LiveSource:
    """The app's periodic tasks as a live schedule source."""
    return LiveSource(SOURCE, PeriodicTaskReader(app).definitions, _last_change)


def _last_change() -> object:
    # why: django_celery_beat's models import only after django.setup(), which the command
    # that loaded the app has run; never at the import of this module.
    from django_celery_beat.models import PeriodicTasks

    return PeriodicTasks.last_change()


class PeriodicTaskReader:
    """Reads the enabled ``PeriodicTask`` rows into schedule definitions; sends clocked ones."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self._reported: set[tuple[str, str]] = set()

    def definitions(self) -> list[ScheduleDefinition]:
        # why: see _last_change
        from django.utils import timezone
        from django_celery_beat.models import PeriodicTask

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
        if row.start_time is not None and row.start_time > now:
            return None  # not yet: the resync after its start time adds it
        if row.expires is not None and row.expires <= now:
            return None
        args, kwargs = _loaded(row.args, "args", list), _loaded(row.kwargs, "kwargs", dict)
        options = {"queue": row.queue or None, "priority": row.priority}
        if row.clocked_id is not None:
            self._send_clocked(row, args, kwargs, options)
            return None
        if row.one_off:
            raise ConfigurationError("one_off is fired only with a clocked schedule")
        if row.interval_id is not None:
            timing: dict[str, Any] = {"every": row.interval.every * SECONDS[row.interval.period]}
        elif row.crontab_id is not None:
            c = row.crontab
            cron = f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}"
            timing = {"cron": cron, "timezone": str(c.timezone)}
        else:
            raise ConfigurationError("its schedule is solar, which pgtasks does not fire")
        return define_schedule(
            row.name,
            row.task,
            **timing,
            args=args,
            kwargs=kwargs,
            queue=entry_queue(self.app, row.task, args, kwargs, options),
            priority=row.priority or 0,
            expires=row.expire_seconds or None,
            source=SOURCE,
        )

    def _send_clocked(
        self, row: Any, args: list[Any], kwargs: dict[str, Any], options: dict[str, Any]
    ) -> None:
        """Send a clocked row once, due at its time (an id derived from the row and the time:
        every beat sends the same task), then disable it, as django-celery-beat does."""
        # why: see _last_change
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
        PeriodicTask.objects.filter(pk=row.pk).update(enabled=False, last_run_at=when)
        log.info("sent clocked periodic task %s due %s", row.name, when.isoformat())

    def _report(self, name: str, problem: str) -> None:
        if (name, problem) not in self._reported:
            self._reported.add((name, problem))
            log.error("periodic task %r is not fired: %s", name, problem)


def _loaded(text: str | None, field: str, kind: type) -> Any:
    try:
        value = json.loads(text or ("[]" if kind is list else "{}"))
    except ValueError:
        raise ConfigurationError(f"its {field} are not JSON: {text!r}") from None
    if not isinstance(value, kind):
        raise ConfigurationError(f"its {field} must be a JSON {'list' if kind is list else 'object'}")
    return value
