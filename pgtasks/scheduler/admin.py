"""Managing schedules at runtime: define, list, pause, resume, delete, trigger, backfill.

Running schedulers read the table on every tick, so every change here reaches them within
one tick, without a restart.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.clock import Clock, DatabaseClock
from pgtasks.scheduler.definitions import (
    ScheduleDefinition,
    StoredSchedule,
    check_schedule_name,
    decode_schedule,
    fire_task_id,
    format_due,
)
from pgtasks.scheduler.firing import fire_without_cursor, manual_task_id
from pgtasks.scheduler.planner import next_fire
from pgtasks.scheduler.timing import due_between
from pgtasks.scheduler.zones import UTC
from pgtasks.sysdb.schedule_records import (
    ListSchedulesParams,
    ScheduleRecord,
    ScheduleStatus,
    ScheduleStatusChange,
    SchedulesUpsert,
)

log = logging.getLogger("pgtasks.beat")

BACKFILL_CHUNK = 500
MAX_BACKFILL_FIRES = 100_000


def clock_of(engine: Engine, clock: Clock | None) -> Clock:
    """``clock``, or by default the database server's: every process agrees on the time."""
    return clock if clock is not None else DatabaseClock(engine.schedules)


def store(
    engine: Engine,
    definitions: list[ScheduleDefinition],
    clock: Clock | None = None,
    deactivate_missing_from: str | None = None,
) -> list[ScheduleRecord]:
    """Create or update schedules (see ``SchedulesUpsert`` for what happens to each).

    A schedule belongs to the source that defined it (``api``, or ``config:<app>`` for an
    app's ``beat_schedule``). A name held by an ACTIVE or PAUSED schedule of another source is
    left alone: for API definitions that raises ConfigurationError (after storing the
    others); a beat's sync (``deactivate_missing_from`` given) logs it and goes on."""
    names = [d.name for d in definitions]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"schedule names must be unique: {sorted(names)}")
    # Sorted, so that two beats syncing at once lock the rows in the same order.
    params = SchedulesUpsert(
        tuple(d.to_write() for d in sorted(definitions, key=lambda d: d.name)),
        format_due(clock_of(engine, clock).now()),
        deactivate_missing_from,
    )
    result = engine.schedules.upsert(params)
    for name in result.deactivated:
        log.warning("schedule %s is no longer configured (%s): now INACTIVE", name, deactivate_missing_from)
    if result.refused:
        owners = {r.name: r.source for r in listing(engine) if r.name in result.refused}
        taken = ", ".join(f"{name!r} (defined by {owners.get(name, '?')})" for name in result.refused)
        if deactivate_missing_from is None:
            raise ConfigurationError(
                f"schedule names already taken: {taken}; change or delete them where they are defined"
            )
        log.warning("beat_schedule entries skipped: names already taken by %s", taken)
    return result.stored


def get(engine: Engine, name: str) -> ScheduleRecord:
    """The stored schedule ``name``; ConfigurationError if there is none."""
    found = engine.schedules.list(ListSchedulesParams(name=check_schedule_name(name)))
    if not found:
        raise ConfigurationError(f"no schedule named {name!r}")
    return found[0]


def listing(engine: Engine, status: str | ScheduleStatus | None = None) -> list[ScheduleRecord]:
    """Stored schedules by name, all or those of one status (case-insensitive)."""
    statuses: tuple[ScheduleStatus, ...] = ()
    if status is not None:
        try:
            statuses = (ScheduleStatus(str(status).upper()),)
        except ValueError:
            known = ", ".join(s.value for s in ScheduleStatus)
            raise ConfigurationError(f"unknown schedule status {status!r}; one of {known}") from None
    return engine.schedules.list(ListSchedulesParams(statuses=statuses))


def set_status(
    engine: Engine, name: str, status: ScheduleStatus, clock: Clock | None = None
) -> ScheduleRecord:
    """Pause (PAUSED) or resume (ACTIVE); resuming does not backfill the paused time."""
    since = format_due(clock_of(engine, clock).now())
    changed = engine.schedules.set_status(ScheduleStatusChange(check_schedule_name(name), status, since))
    if changed is None:
        raise ConfigurationError(f"no schedule named {name!r}")
    return changed


def delete(engine: Engine, name: str) -> bool:
    """Delete ``name`` (its fired tasks stay); False if there was none."""
    return engine.schedules.delete(check_schedule_name(name))


def trigger(engine: Engine, name: str) -> str:
    """Fire a schedule now, once, outside its timing; return the task id."""
    schedule = decode_schedule(get(engine, name))
    task_id = manual_task_id(name)
    fire_without_cursor(engine, schedule, [task_id])
    return task_id


@dataclass(frozen=True, slots=True)
class BackfillReport:
    """The due times of a manual backfill: ``fired`` now, ``existing`` fired before."""

    fired: list[str]
    existing: list[str]


def backfill(
    engine: Engine,
    name: str,
    since: dt.datetime,
    until: dt.datetime | None = None,
    clock: Clock | None = None,
) -> BackfillReport:
    """Fire every due time in ``[since, until]`` (until defaults to now) that has not fired.

    Naive datetimes are UTC. Due times that already fired keep their task (same id), so two
    backfills at once, or a backfill racing the scheduler, fire each due time once. A range
    with more than MAX_BACKFILL_FIRES due times is refused before anything fires.
    """
    schedule = decode_schedule(get(engine, name))
    now = clock_of(engine, clock).now()
    start, end = _aware(since, "since"), _aware(until, "until") if until is not None else now
    if end < start:
        raise ConfigurationError(f"backfill of {name!r}: until ({end}) is before since ({start})")
    if end > now:
        raise ConfigurationError(f"backfill of {name!r}: until ({end}) is in the future")
    # Due times are whole seconds: the first one at or after `start`.
    first = start.replace(microsecond=0) - (dt.timedelta(0) if start.microsecond else dt.timedelta(seconds=1))
    if len(due_between(schedule.timing, first, end, MAX_BACKFILL_FIRES + 1)) > MAX_BACKFILL_FIRES:
        raise ConfigurationError(
            f"backfill of {name!r}: more than {MAX_BACKFILL_FIRES} due times between {format_due(start)} "
            f"and {format_due(end)}; nothing fired; use a shorter range"
        )
    fired: list[str] = []
    existing: list[str] = []
    after = first
    while True:
        due = due_between(schedule.timing, after, end, BACKFILL_CHUNK)
        if not due:
            break
        result = fire_without_cursor(engine, schedule, [fire_task_id(name, d) for d in due])
        inserted = set(result.inserted)
        for task in result.results:
            (fired if task.task_id in inserted else existing).append(task.task_id)
        after = due[-1]
    return BackfillReport(fired, existing)


def next_fire_of(record: ScheduleRecord, now: dt.datetime) -> dt.datetime | None:
    """When an ACTIVE schedule fires next, seen from ``now`` (None for paused, inactive or
    undecodable ones)."""
    if record.status is not ScheduleStatus.ACTIVE:
        return None
    try:
        schedule: StoredSchedule = decode_schedule(record)
        return next_fire(schedule, now)
    except (ConfigurationError, ValueError):
        return None


def _aware(value: dt.datetime, what: str) -> dt.datetime:
    if not isinstance(value, dt.datetime):
        raise ConfigurationError(f"{what} must be a datetime, not {value!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
