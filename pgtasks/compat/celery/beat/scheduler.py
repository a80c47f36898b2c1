"""Celery's ``celery.beat.Scheduler``: the base class of the schedulers libraries write
(django-celery-beat's ``DatabaseScheduler``, redbeat's, ...), with Celery's API and behaviour:
a schedule of entries, a heap of their next due times, ``tick()`` sending one due entry at a
time, ``reserve``/``sync`` for subclasses that store the entries. ``pgtasks beat`` does not run
these classes (it fires schedules from the database, exactly once across beats, and reads
django-celery-beat's rows itself); they run where code drives a scheduler itself."""

from __future__ import annotations

import calendar
import copy
import heapq
import logging
import time
import traceback
from collections.abc import Mapping
from functools import cached_property
from typing import Any, NamedTuple

from pgtasks.compat.celery.beat.entry import ScheduleEntry, evaluate_args, evaluate_kwargs
from pgtasks.compat.celery.schedules import crontab
from pgtasks.compat.celery.utils.functional import maybe_evaluate
from pgtasks.compat.celery.utils.time import maybe_make_aware
from pgtasks.compat.kombu.messaging import Producer as KombuProducer

__all__ = ["DEFAULT_MAX_INTERVAL", "Scheduler", "SchedulingError", "event_t"]

logger = logging.getLogger("celery.beat")

DEFAULT_MAX_INTERVAL = 300  # seconds between two looks at the schedule, at most


class SchedulingError(Exception):
    """An entry's task could not be sent."""


class event_t(NamedTuple):
    """An item of the scheduler's heap: when (a UTC timestamp), priority, entry."""

    time: float
    priority: int
    entry: Any


def _drifted(seconds: Any, drift: float = -0.010) -> Any:
    return seconds + drift if seconds and seconds > 0 else seconds


class Scheduler:
    """Celery's scheduler of periodic tasks. ``schedule`` is a mapping of names to entries
    (``Entry`` instances) that subclasses may store elsewhere (the ``schedule`` property);
    ``tick()`` sends the first due entry and says how long to sleep. With ``lazy`` the schedule
    is not set up (for introspection)."""

    Entry: type[ScheduleEntry] = ScheduleEntry
    max_interval: float = DEFAULT_MAX_INTERVAL
    sync_every: float = 3 * 60  # seconds between two syncs, at most
    sync_every_tasks: int | None = None  # or after this many sends
    _last_sync: float | None = None
    _tasks_since_sync = 0
    logger = logger

    def __init__(
        self,
        app: Any,
        schedule: Any = None,
        max_interval: float | None = None,
        Producer: Any = None,
        lazy: bool = False,
        sync_every_tasks: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.app = app
        self.data = maybe_evaluate({} if schedule is None else schedule)
        self.max_interval = max_interval or app.conf.beat_max_loop_interval or self.max_interval
        self.Producer = Producer or KombuProducer
        self._heap: list[event_t] | None = None
        self.old_schedulers: Any = None
        self.sync_every_tasks = app.conf.beat_sync_every if sync_every_tasks is None else sync_every_tasks
        if not lazy:
            self.setup_schedule()

    # -- the schedule ---------------------------------------------------------------------------
    def get_schedule(self) -> Any:
        return self.data

    def set_schedule(self, schedule: Any) -> None:
        self.data = schedule

    schedule = property(get_schedule, set_schedule)

    def setup_schedule(self) -> None:
        """Add the default entries, then the app's ``beat_schedule``."""
        self.install_default_entries(self.data)
        self.merge_inplace(self.app.conf.beat_schedule)

    def install_default_entries(self, data: Mapping[str, Any]) -> None:
        """``celery.backend_cleanup`` daily at 4:00 when results expire (``result_expires``)
        and the result backend does not expire them itself, unless ``data`` has one."""
        backend_expires = getattr(self.app.backend, "supports_autoexpire", False)
        entries = {}
        if self.app.conf.result_expires and not backend_expires and "celery.backend_cleanup" not in data:
            entries["celery.backend_cleanup"] = {
                "task": "celery.backend_cleanup",
                "schedule": crontab("0", "4", "*"),
                "options": {"expires": 12 * 3600},
            }
        self.update_from_dict(entries)

    def add(self, **kwargs: Any) -> ScheduleEntry:
        entry = self.Entry(app=self.app, **kwargs)
        self.schedule[entry.name] = entry
        return entry

    def _maybe_entry(self, name: str, entry: Any) -> ScheduleEntry:
        if isinstance(entry, self.Entry):
            entry.app = self.app
            return entry
        return self.Entry(**dict(entry, name=name, app=self.app))

    def update_from_dict(self, dict_: Mapping[str, Any]) -> None:
        """Add (or replace) the entries of ``dict_``: entries, or their fields as dicts."""
        self.schedule.update({name: self._maybe_entry(name, entry) for name, entry in dict_.items()})

    def merge_inplace(self, b: Mapping[str, Any]) -> None:
        """Make the schedule hold the entries of ``b`` (dicts of fields): the others are
        removed, those already there keep their last run and count and take ``b``'s fields."""
        schedule = self.schedule
        for name in set(schedule) ^ set(b):
            schedule.pop(name, None)
        for name in b:
            entry = self.Entry(**dict(b[name], name=name, app=self.app))
            if schedule.get(name):
                schedule[name].update(entry)
            else:
                schedule[name] = entry

    def schedules_equal(self, old_schedules: Any, new_schedules: Any) -> bool:
        """Whether two schedules hold the same names with equal entries."""
        if old_schedules is None or new_schedules is None:
            return old_schedules is new_schedules
        if set(old_schedules) != set(new_schedules):
            return False
        return all(
            new_schedules.get(name) and new_schedules[name] == entry for name, entry in old_schedules.items()
        )

    # -- running it -----------------------------------------------------------------------------
    def adjust(self, n: Any, drift: float = -0.010) -> Any:
        return _drifted(n, drift)

    def is_due(self, entry: ScheduleEntry) -> Any:
        return entry.is_due()

    def _when(self, entry: ScheduleEntry, next_time_to_run: Any, mktime: Any = calendar.timegm) -> float:
        """The UTC timestamp ``next_time_to_run`` seconds from the entry's now: the heap's key."""
        now = maybe_make_aware(entry.default_now())
        return float(
            mktime(now.utctimetuple()) + now.microsecond / 1e6 + (self.adjust(next_time_to_run) or 0)
        )

    def populate_heap(self, event_t: Any = event_t, heapify: Any = heapq.heapify) -> None:
        """The heap of every entry's next due time (now for a due one)."""
        self._heap = []
        for entry in self.schedule.values():
            due, delay = entry.is_due()
            self._heap.append(event_t(self._when(entry, 0 if due else delay) or 0, 5, entry))
        heapify(self._heap)

    def tick(
        self,
        event_t: Any = event_t,
        min: Any = min,
        heappop: Any = heapq.heappop,
        heappush: Any = heapq.heappush,
    ) -> float:
        """Send the first entry of the heap if it is due; the seconds to sleep before the
        next tick (0 after a send, at most ``max_interval``). A schedule that changed since
        the heap was built (by its entries' editable fields) rebuilds it."""
        if self._heap is None or not self.schedules_equal(self.old_schedulers, self.schedule):
            self.old_schedulers = copy.copy(self.schedule)
            self.populate_heap()
        heap = self._heap
        if not heap:
            return self.max_interval
        event = heap[0]
        entry = event[2]
        due, next_time_to_run = self.is_due(entry)
        if due:
            first = heappop(heap)
            if first is not event:  # the heap changed under us: sleep until its first item
                heappush(heap, first)
                return float(min(first[0], self.max_interval))
            next_entry = self.reserve(entry)
            self.apply_entry(entry, producer=self.producer)
            heappush(heap, event_t(self._when(next_entry, next_time_to_run), event[1], next_entry))
            return 0
        delay = self.adjust(next_time_to_run)
        numeric = isinstance(delay, (int, float)) and not isinstance(delay, bool)
        return float(min(delay if numeric else self.max_interval, self.max_interval))

    def reserve(self, entry: ScheduleEntry) -> ScheduleEntry:
        """The entry once run (``next(entry)``), put in its place in the schedule."""
        new_entry = self.schedule[entry.name] = next(entry)
        return new_entry

    def apply_entry(self, entry: ScheduleEntry, producer: Any = None) -> None:
        """Send the entry's task; a failure is logged, never raised (the beat goes on)."""
        logger.info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)
        try:
            result = self.apply_async(entry, producer=producer, advance=False)
        except Exception as exc:
            logger.error("Message Error: %s\n%s", exc, traceback.format_stack(), exc_info=True)
        else:
            if result is not None and hasattr(result, "id"):
                logger.debug("%s sent. id->%s", entry.task, result.id)
            else:
                logger.debug("%s sent.", entry.task)

    def apply_async(
        self, entry: ScheduleEntry, producer: Any = None, advance: bool = True, **kwargs: Any
    ) -> Any:
        """Send the entry's task with its arguments and options (the registered task's
        ``apply_async``, else ``send_task``); with ``advance`` the entry is reserved first.
        A failure to send is a :class:`SchedulingError`; every send counts toward a sync."""
        entry = self.reserve(entry) if advance else entry
        task = self.app.tasks.get(entry.task)
        try:
            args, kwargs_ = evaluate_args(entry.args), evaluate_kwargs(entry.kwargs)
            if task is not None:
                return task.apply_async(args, kwargs_, producer=producer, **entry.options)
            return self.send_task(entry.task, args, kwargs_, producer=producer, **entry.options)
        except Exception as exc:
            raise SchedulingError(f"Couldn't apply scheduled task {entry.name}: {exc}") from exc
        finally:
            self._tasks_since_sync += 1
            if self.should_sync():
                self._do_sync()

    def send_task(self, *args: Any, **kwargs: Any) -> Any:
        return self.app.send_task(*args, **kwargs)

    # -- storing it -----------------------------------------------------------------------------
    def should_sync(self) -> bool:
        """Never synced, ``sync_every`` seconds passed, or ``sync_every_tasks`` sends made."""
        if not self._last_sync or time.monotonic() - self._last_sync > self.sync_every:
            return True
        return bool(self.sync_every_tasks and self._tasks_since_sync >= self.sync_every_tasks)

    def _do_sync(self) -> None:
        try:
            logger.debug("beat: Synchronizing schedule...")
            self.sync()
        finally:
            self._last_sync = time.monotonic()
            self._tasks_since_sync = 0

    def sync(self) -> None:
        """Store the schedule (nothing here: subclasses that keep it somewhere do)."""

    def close(self) -> None:
        self.sync()

    # -- where tasks go -------------------------------------------------------------------------
    @cached_property
    def connection(self) -> Any:
        return self.app.connection_for_write()

    def _ensure_connected(self) -> Any:
        def on_error(exc: BaseException, interval: float) -> None:
            logger.error("beat: Connection error: %s. Trying again in %s seconds...", exc, interval)

        return self.connection.ensure_connection(on_error, self.app.conf.broker_connection_max_retries)

    @cached_property
    def producer(self) -> Any:
        """What ``tick`` passes to ``apply_entry`` (pgtasks sends through the database: it
        is accepted and not used)."""
        return self.Producer(self._ensure_connected(), auto_declare=False)

    @property
    def info(self) -> str:
        return ""
