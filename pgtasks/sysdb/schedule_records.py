"""Records and parameter objects of the schedule methods of the system database.

A schedule is a row of ``workflow_schedules``. Its ``last_fired_at`` is the cursor of the
scheduler: the latest due time fired, in the canonical UTC text form
``YYYY-MM-DDTHH:MM:SSZ``; a fire moves it forward with a compare-and-set in the transaction
that inserts the fired tasks, so racing schedulers fire each due time once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pgtasks.sysdb.records import EnqueueResult, NewTask


class ScheduleStatus(str, Enum):
    """ACTIVE fires; PAUSED was paused by hand; INACTIVE left the configuration (beat_schedule)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    INACTIVE = "INACTIVE"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ScheduleWrite:
    """The definition of one schedule, as stored. ``context`` (arguments) and ``options`` are
    JSON text the scheduler reads; the database does not look inside them."""

    name: str
    task_name: str
    schedule: str  # the cron expression, or "every <N>s" for an interval schedule
    timezone: str = "UTC"
    interval_seconds: int | None = None
    day_and: bool = False  # both cron day fields must match (Celery's crontab)
    context: str = '{"args": [], "kwargs": {}}'
    options: str = "{}"
    queue_name: str | None = None
    automatic_backfill: bool = False
    backfill_window_seconds: int = 86_400
    source: str = "api"  # "api" (app.schedule) or "config:<app>" (an app's beat_schedule)


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """A row of ``workflow_schedules``."""

    schedule_id: str
    name: str
    task_name: str
    schedule: str
    timezone: str
    interval_seconds: int | None
    day_and: bool
    context: str
    options: str
    queue_name: str | None
    status: ScheduleStatus
    last_fired_at: str | None
    active_since: str | None
    automatic_backfill: bool
    backfill_window_seconds: int
    source: str
    created_at: int
    updated_at: int

    @property
    def cursor(self) -> str | None:
        """Due times at or before this are settled: the later of the last fire and the moment
        the schedule was created, changed or resumed (canonical UTC text, comparable as text)."""
        candidates = [c for c in (self.last_fired_at, self.active_since) if c is not None]
        return max(candidates) if candidates else None


@dataclass(frozen=True, slots=True)
class SchedulesUpsert:
    """Create or change schedules in one transaction.

    A new schedule, one whose timing (expression, interval, zone, day rule) changed, and an
    INACTIVE one that comes back start firing after ``active_since`` (no backfill of the time
    before). A PAUSED schedule stays paused. A schedule belongs to its source: a write whose
    name is held by an ACTIVE or PAUSED schedule of another source changes nothing and is
    reported as refused. With ``deactivate_missing_from`` (a source, such as
    "config:proj"), the ACTIVE or PAUSED schedules of that source not in ``schedules`` become
    INACTIVE.
    """

    schedules: tuple[ScheduleWrite, ...]
    active_since: str
    deactivate_missing_from: str | None = None


@dataclass(frozen=True, slots=True)
class SchedulesStored:
    """What an upsert did: the rows ``stored``, the names ``refused`` (held by another source)
    and the names ``deactivated`` (their source no longer defines them), both sorted."""

    stored: list[ScheduleRecord]
    refused: list[str]
    deactivated: list[str]


@dataclass(frozen=True, slots=True)
class ListSchedulesParams:
    """Filters for listing schedules; empty means all."""

    statuses: tuple[ScheduleStatus, ...] = ()
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ScheduleStatusChange:
    """Pause (PAUSED) or resume (ACTIVE) a schedule. A resumed schedule fires after
    ``active_since``: the time it spent paused is not backfilled."""

    name: str
    status: ScheduleStatus
    active_since: str


@dataclass(frozen=True, slots=True)
class FireCursor:
    """The compare-and-set of a fire: applies only if the schedule is still ACTIVE with these
    values of ``last_fired_at`` and ``active_since`` (None compares equal to NULL)."""

    expected_last_fired_at: str | None
    expected_active_since: str | None
    new_last_fired_at: str


@dataclass(frozen=True, slots=True)
class ScheduleFire:
    """Insert the tasks of a fire and move the cursor, in one transaction.

    ``cursor`` None inserts without moving it (a manual trigger or backfill: the task ids
    alone prevent duplicates). With ``pin_latest_version`` every task is pinned to the newest
    registered application version (see ``schedule_fire``). ``before_commit`` runs inside
    the transaction just before it commits (the scheduler's crash point).
    """

    name: str
    tasks: tuple[NewTask, ...]
    cursor: FireCursor | None = None
    pin_latest_version: bool = True
    before_commit: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class FireResult:
    """``fired`` is False when the compare-and-set lost (another scheduler fired first, or the
    schedule was paused or changed): then nothing was inserted."""

    fired: bool
    results: tuple[EnqueueResult, ...] = ()
    application_version: str | None = None

    @property
    def inserted(self) -> list[str]:
        return [r.task_id for r in self.results if r.inserted]


def schedule_from_row(row: Mapping[str, Any]) -> ScheduleRecord:
    """Build a ScheduleRecord from a ``workflow_schedules`` row (either dialect)."""
    return ScheduleRecord(
        schedule_id=row["schedule_id"],
        name=row["schedule_name"],
        task_name=row["workflow_name"],
        schedule=row["schedule"],
        timezone=row["cron_timezone"] or "UTC",
        interval_seconds=row["interval_seconds"],
        day_and=bool(row["cron_day_and"]),
        context=row["context"],
        options=row["options"],
        queue_name=row["queue_name"],
        status=ScheduleStatus(row["status"]),
        last_fired_at=row["last_fired_at"],
        active_since=row["active_since"],
        automatic_backfill=bool(row["automatic_backfill"]),
        backfill_window_seconds=int(row["backfill_window_seconds"]),
        source=row["source"],
        created_at=int(row["created_at"]),
        updated_at=int(row["updated_at"]),
    )


def upsert_params(write: ScheduleWrite, schedule_id: str, active_since: str) -> dict[str, Any]:
    """The named parameters of the upsert statement (both dialects)."""
    return {
        "schedule_id": schedule_id,
        "name": write.name,
        "task_name": write.task_name,
        "schedule": write.schedule,
        "timezone": write.timezone,
        "interval_seconds": write.interval_seconds,
        "day_and": write.day_and,
        "context": write.context,
        "options": write.options,
        "queue_name": write.queue_name,
        "automatic_backfill": write.automatic_backfill,
        "backfill_window_seconds": write.backfill_window_seconds,
        "source": write.source,
        "active_since": active_since,
    }
