"""Celery's ``celery.beat``: the scheduler classes that integrations import and wrap.

``pgtasks beat`` fires schedules from the database (exactly once across beats) and does not
run these classes; :meth:`Scheduler.apply_entry` sends an entry's task as Celery's does, for
code that calls it directly.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PersistentScheduler", "ScheduleEntry", "Scheduler"]


class ScheduleEntry:
    """One periodic task of a schedule: its task name, schedule, arguments and options."""

    def __init__(
        self,
        name: str | None = None,
        task: str | None = None,
        last_run_at: Any = None,
        total_run_count: int | None = None,
        schedule: Any = None,
        args: Any = (),
        kwargs: Any = None,
        options: Any = None,
        relative: bool = False,
        app: Any = None,
    ) -> None:
        self.name = name
        self.task = task
        self.last_run_at = last_run_at
        self.total_run_count = total_run_count or 0
        self.schedule = schedule
        self.args = tuple(args or ())
        self.kwargs = dict(kwargs or {})
        self.options = dict(options or {})
        self.relative = relative
        self.app = app

    def __repr__(self) -> str:
        return (
            f"<ScheduleEntry: {self.name} {self.task}(*{list(self.args)}, **{self.kwargs}) {self.schedule}>"
        )


class Scheduler:
    """Celery's scheduler base. ``apply_entry`` sends the entry's task now."""

    Entry = ScheduleEntry

    def __init__(self, app: Any, schedule: Any = None, **kwargs: Any) -> None:
        self.app = app
        self.schedule = dict(schedule or {})

    def apply_entry(self, entry: ScheduleEntry, producer: Any = None) -> Any:
        return self.apply_async(entry, producer=producer)

    def apply_async(
        self, entry: ScheduleEntry, producer: Any = None, advance: bool = True, **kwargs: Any
    ) -> Any:
        entry.total_run_count += 1
        return self.app.send_task(entry.task, entry.args, entry.kwargs, **entry.options)


class PersistentScheduler(Scheduler):
    """Celery's shelve-backed scheduler; pgtasks keeps schedule state in the database."""
