"""Celery's ``celery.beat.ScheduleEntry``: one periodic task of a scheduler's schedule, and
``BeatLazyFunc``, an argument computed each time the entry is sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pgtasks.compat.celery.schedules import maybe_schedule

__all__ = ["BeatLazyFunc", "ScheduleEntry", "evaluate_args", "evaluate_kwargs"]


class BeatLazyFunc:
    """An entry's argument called each time the entry is sent (``BeatLazyFunc(now)``)."""

    def __init__(self, func: Any, *args: Any, **kwargs: Any) -> None:
        self._func = func
        self._args, self._kwargs = args, kwargs

    def __call__(self) -> Any:
        return self.delay()

    def delay(self) -> Any:
        return self._func(*self._args, **self._kwargs)


def evaluate_args(args: Any) -> list[Any]:
    """An entry's positional arguments as sent: each ``BeatLazyFunc`` called."""
    return [value() if isinstance(value, BeatLazyFunc) else value for value in args or ()]


def evaluate_kwargs(kwargs: Any) -> dict[str, Any]:
    """An entry's keyword arguments as sent: each ``BeatLazyFunc`` called."""
    return {
        key: value() if isinstance(value, BeatLazyFunc) else value for key, value in (kwargs or {}).items()
    }


def _call_repr(task: Any, args: Any, kwargs: Any) -> str:
    shown = [repr(a) for a in args or ()] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()]
    return f"{task}({', '.join(shown)})"


class ScheduleEntry:
    """One periodic task: its ``name``, ``task``, ``schedule`` (seconds and timedeltas become a
    ``schedule``), ``args``, ``kwargs`` and send ``options``, with ``last_run_at`` (now when
    not given) and ``total_run_count``. As Celery's, an entry is never changed when it runs:
    ``next(entry)`` is a new entry, run now and counted once more, that the scheduler keeps in
    its place. Two entries are equal when their task, schedule, arguments and options are."""

    name: Any = None
    schedule: Any = None
    args: Any = None
    kwargs: Any = None
    options: Any = None
    last_run_at: Any = None
    total_run_count: int = 0

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
        self.app = app
        self.name = name
        self.task = task
        self.args = args
        self.kwargs = kwargs or {}
        self.options = options or {}
        self.schedule = maybe_schedule(schedule, relative, app=app)
        self.last_run_at = last_run_at or self.default_now()
        self.total_run_count = total_run_count or 0

    def default_now(self) -> Any:
        """Now, by the entry's schedule's clock (else its app's)."""
        return self.schedule.now() if self.schedule else self.app.now()

    _default_now = default_now  # Celery's older name, which subclasses call

    def _next_instance(self, last_run_at: Any = None) -> ScheduleEntry:
        """The entry as it is once sent: run at ``last_run_at`` (now), counted once more."""
        fields = dict(self)
        fields.update(last_run_at=last_run_at or self.default_now(), total_run_count=self.total_run_count + 1)
        return self.__class__(**fields)

    __next__ = next = _next_instance

    def update(self, other: ScheduleEntry) -> None:
        """Take ``other``'s editable fields: task, schedule, args, kwargs and options."""
        for field in ("task", "schedule", "args", "kwargs", "options"):
            self.__dict__[field] = getattr(other, field)

    def is_due(self) -> Any:
        """The schedule's ``(is_due, next)`` pair from ``last_run_at``."""
        return self.schedule.is_due(self.last_run_at)

    def editable_fields_equal(self, other: Any) -> bool:
        return all(
            getattr(self, field) == getattr(other, field)
            for field in ("task", "args", "kwargs", "options", "schedule")
        )

    def __eq__(self, other: object) -> bool:
        return self.editable_fields_equal(other)

    __hash__ = None  # type: ignore[assignment]  # equal by value, and changed in place by update()

    def __lt__(self, other: object) -> bool:
        # The scheduler's heap orders by (time, priority, entry): entries only break ties.
        if isinstance(other, ScheduleEntry):
            return id(self) < id(other)
        return NotImplemented

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(vars(self).items())

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.name, self.task, self.last_run_at, self.total_run_count, self.schedule)
        return self.__class__, (*fields, self.args, self.kwargs, self.options)

    def __repr__(self) -> str:
        call = _call_repr(self.task, self.args, self.kwargs)
        return f"<{type(self).__name__}: {self.name} {call} {self.schedule}"
