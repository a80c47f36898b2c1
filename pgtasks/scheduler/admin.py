"""Managing schedules at runtime: define, list, pause, resume, delete, trigger, backfill.

Running schedulers read the table on every tick, so every change here reaches them within
one tick, without a restart.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.clock import Clock, SystemClock
from pgtasks.scheduler.definitions import (
    ScheduleDefinition,
    StoredSchedule,
    decode_schedule,
    fire_task_id,
    format_due,
)
from pgtasks.scheduler.firing import fire_without_cursor, manual_task_id
from pgtasks.scheduler.planner import next_fire
from pgtasks.scheduler.timing import due_between
from pgtasks.sysdb.schedule_records import (
    ListSchedulesParams,
    ScheduleRecord,
    ScheduleStatus,
    ScheduleStatusChange,
    SchedulesUpsert,
)

BACKFILL_CHUNK = 500
MAX_BACKFILL_FIRES = 100_000
SYSTEM_CLOCK = SystemClock()


def store(
    engine: Engine,
    definitions: list[ScheduleDefinition],
    clock: Clock = SYSTEM_CLOCK,
    deactivate_missing_from: str | None = None,
) -> list[ScheduleRecord]:
    """Create or update schedules (see ``SchedulesUpsert`` for what happens to each)."""
    names = [d.name for d in definitions]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"schedule names must be unique: {sorted(names)}")
    params = SchedulesUpsert(
        tuple(d.to_write() for d in definitions), format_due(clock.now()), deactivate_missing_from
    )
    return engine.sysdb.schedules_upsert(params)


def get(engine: Engine, name: str) -> ScheduleRecord:
    found = engine.sysdb.schedules_list(ListSchedulesParams(name=name))
    if not found:
        raise ConfigurationError(f"no schedule named {name!r}")
    return found[0]


def listing(engine: Engine, status: str | ScheduleStatus | None = None) -> list[ScheduleRecord]:
    statuses: tuple[ScheduleStatus, ...] = ()
    if status is not None:
        try:
            statuses = (ScheduleStatus(str(status).upper()),)
        except ValueError:
            known = ", ".join(s.value for s in ScheduleStatus)
            raise ConfigurationError(f"unknown schedule status {status!r}; one of {known}") from None
    return engine.sysdb.schedules_list(ListSchedulesParams(statuses=statuses))


def set_status(
    engine: Engine, name: str, status: ScheduleStatus, clock: Clock = SYSTEM_CLOCK
) -> ScheduleRecord:
    """Pause (PAUSED) or resume (ACTIVE); resuming does not backfill the paused time."""
    changed = engine.sysdb.schedule_set_status(ScheduleStatusChange(name, status, format_due(clock.now())))
    if changed is None:
        raise ConfigurationError(f"no schedule named {name!r}")
    return changed


def delete(engine: Engine, name: str) -> bool:
    return engine.sysdb.schedule_delete(name)


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
    clock: Clock = SYSTEM_CLOCK,
) -> BackfillReport:
    """Fire every due time in ``[since, until]`` (until defaults to now) that has not fired.

    Naive datetimes are UTC. Due times that already fired keep their task (same id), so two
    backfills at once, or a backfill racing the scheduler, fire each due time once.
    """
    schedule = decode_schedule(get(engine, name))
    start, end = _aware(since, "since"), _aware(until, "until") if until is not None else clock.now()
    if end < start:
        raise ConfigurationError(f"backfill of {name!r}: until ({end}) is before since ({start})")
    if end > clock.now():
        raise ConfigurationError(f"backfill of {name!r}: until ({end}) is in the future")
    fired: list[str] = []
    existing: list[str] = []
    # Due times are whole seconds: the first one at or after `start`.
    after = start.replace(microsecond=0) - (dt.timedelta(0) if start.microsecond else dt.timedelta(seconds=1))
    while True:
        due = due_between(schedule.timing, after, end, BACKFILL_CHUNK)
        if not due:
            break
        if len(fired) + len(existing) + len(due) > MAX_BACKFILL_FIRES:
            raise ConfigurationError(
                f"backfill of {name!r} stopped after {MAX_BACKFILL_FIRES} due times; use a shorter range"
            )
        result = fire_without_cursor(engine, schedule, [fire_task_id(name, d) for d in due])
        inserted = set(result.inserted)
        for task in result.results:
            (fired if task.task_id in inserted else existing).append(task.task_id)
        after = due[-1]
    return BackfillReport(fired, existing)


def next_fire_of(record: ScheduleRecord, clock: Clock = SYSTEM_CLOCK) -> dt.datetime | None:
    """When an ACTIVE schedule fires next (None for paused, inactive or undecodable ones)."""
    if record.status is not ScheduleStatus.ACTIVE:
        return None
    try:
        schedule: StoredSchedule = decode_schedule(record)
    except ConfigurationError:
        return None
    return next_fire(schedule, clock.now())


def _aware(value: dt.datetime, what: str) -> dt.datetime:
    if not isinstance(value, dt.datetime):
        raise ConfigurationError(f"{what} must be a datetime, not {value!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
