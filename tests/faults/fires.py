"""Scheduled fires: the set a schedule must have fired, and a check against what it did.

The expected set comes from croniter alone (not pgtasks' planner): every due time of the
cron expression after the schedule became active, up to its cursor (``last_fired_at``). The
fired set comes from the tasks themselves (ids ``sched-<name>-<due time>``) and the status
history (how many times each was inserted). With ``automatic_backfill`` a schedule must
have fired every due time of that range exactly once, however its schedulers died.
"""

from __future__ import annotations

import collections
import datetime as dt
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from croniter import croniter

from pgtasks.scheduler.definitions import format_due, parse_due
from tests.faults.invariants import query, status_history


@dataclass
class FireReport:
    """What :func:`check_fires` found: the fired task ids and any problem."""

    name: str
    expected: int = 0
    task_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        verdict = "PASSED" if not self.problems else "FAILED"
        head = f"schedule {self.name}: {len(self.task_ids)} fired of {self.expected} due: {verdict}"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


def expected_fires(cron: str, after: dt.datetime, until: dt.datetime, timezone: str = "UTC") -> list[str]:
    """Every due time of ``cron`` in ``(after, until]``, as the UTC text of fire ids."""
    zone = ZoneInfo(timezone)
    due = croniter(cron, after.astimezone(zone), second_at_beginning=_seconds(cron))
    found: list[str] = []
    while (instant := due.get_next(dt.datetime)) <= until:
        found.append(format_due(instant))  # the id's text only: the instants are croniter's
    return found


def check_fires(
    database_url: str,
    name: str,
    cron: str,
    timezone: str = "UTC",
    caught_up_by: dt.datetime | None = None,
) -> FireReport:
    """Check that schedule ``name`` fired exactly the due times of ``cron`` after it became
    active, up to its cursor, each once, and (with ``caught_up_by``) that its cursor reached
    that instant, less one period of grace: the schedulers kept up until then."""
    report = FireReport(name)
    rows = query(database_url, "SELECT active_since, last_fired_at FROM {s} WHERE schedule_name = ?", (name,))
    if not rows:
        report.problems.append(f"no schedule named {name!r}")
        return report
    active_since, last_fired_at = (parse_due(text) if text else None for text in rows[0])
    if active_since is None:
        report.problems.append(f"schedule {name!r} was never activated")
        return report
    cursor = last_fired_at or active_since
    expected = expected_fires(cron, active_since, cursor, timezone)
    report.expected = len(expected)
    prefix = f"sched-{name}-"
    report.task_ids = [
        r[0] for r in query(database_url, "SELECT workflow_uuid FROM {t}") if r[0].startswith(prefix)
    ]
    fired = {task_id.removeprefix(prefix) for task_id in report.task_ids}
    missing, extra = sorted(set(expected) - fired), sorted(fired - set(expected))
    if missing:
        report.problems.append(f"{len(missing)} due times never fired: {_few(missing)}")
    if extra:
        report.problems.append(f"{len(extra)} fires at times that were not due: {_few(extra)}")
    inserts = collections.Counter(c.task_id for c in status_history(database_url) if c.old is None)
    twice = sorted(t for t in report.task_ids if inserts[t] > 1)
    if twice:
        report.problems.append(f"{len(twice)} due times fired more than once: {_few(twice)}")
    if caught_up_by is not None:
        # One period of grace: the due time just before ``caught_up_by`` may be firing now.
        due = croniter(cron, caught_up_by.astimezone(ZoneInfo(timezone)), second_at_beginning=_seconds(cron))
        due.get_prev(dt.datetime)
        owed = due.get_prev(dt.datetime).astimezone(dt.UTC)
        if cursor < owed:
            behind = f"{cursor:%H:%M:%S}, not {owed:%H:%M:%S} or later"
            report.problems.append(f"schedule {name!r} fell behind: its cursor was {behind}")
    return report


def _seconds(cron: str) -> bool:
    return len(cron.split()) == 6


def _few(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
