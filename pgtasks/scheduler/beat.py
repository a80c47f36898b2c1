"""The beat loop: read the ACTIVE schedules, fire what is due, sleep until the next due time.

Any number of beats may run against one database (``pgtasks beat`` processes, or workers
started with ``-B``). They do not coordinate: each fire is a compare-and-set on the
schedule's cursor in the transaction that inserts the fired tasks, and each task id is
derived from its due time, so every due time fires exactly once whichever beat gets there
first, and a beat killed in the middle of a fire leaves nothing behind (its transaction
rolls back; another beat fires that due time).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.scheduler import admin
from pgtasks.scheduler.clock import Clock, DatabaseClock
from pgtasks.scheduler.definitions import (
    ScheduleDefinition,
    StoredSchedule,
    decode_schedule,
    fire_task_id,
    format_due,
)
from pgtasks.scheduler.firing import fire_due
from pgtasks.scheduler.live import LiveSource, SourceFollower
from pgtasks.scheduler.planner import DEFAULT_GRACE_SECONDS, next_fire, plan_fires
from pgtasks.scheduler.timing import floor_second, next_due
from pgtasks.support.backoff import Backoff
from pgtasks.support.loops import ErrorPolicy, Loop
from pgtasks.sysdb.schedule_records import ListSchedulesParams, ScheduleRecord, ScheduleStatus

log = logging.getLogger("pgtasks.beat")

MIN_SLEEP = 0.005
MAX_FAILED_TICK_PAUSE = 10.0  # the longest pause after failed ticks
DECODED_CACHE_SIZE = 10_000  # decoded timings kept between ticks


@dataclass(frozen=True, slots=True)
class BeatSettings:
    """``max_interval``: the longest sleep between two reads of the table (how soon a change
    made elsewhere is seen). ``grace``: how late a due time may be and still count as on
    time rather than missed (see the planner). ``batch``: most due times per transaction."""

    max_interval: float = 1.0
    grace: float = DEFAULT_GRACE_SECONDS
    batch: int = 500

    def __post_init__(self) -> None:
        if not 0 < self.max_interval <= 3600:
            raise ConfigurationError(f"max_interval must be in (0, 3600] seconds, not {self.max_interval!r}")
        if not 0 <= self.grace <= 3600:
            raise ConfigurationError(f"grace must be in [0, 3600] seconds, not {self.grace!r}")
        if self.batch < 1:
            raise ConfigurationError("batch must be >= 1")


@dataclass(slots=True)
class TickReport:
    """What one tick did: the task ids it inserted, the schedules whose fire another scheduler
    made first (the compare-and-set lost), and when the next due time is."""

    fired: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    next_due: dt.datetime | None = None
    more_pending: bool = False  # a backfill larger than one batch continues at once


class Beat:
    """One scheduler. ``tick()`` does one pass (tests drive it with a ManualClock); ``loop()``
    ticks on a thread, ``run(stop)`` until ``stop`` is set. The default clock is the database
    server's, so beats on machines whose clocks disagree still agree on what is due."""

    def __init__(
        self, engine: Engine, clock: Clock | None = None, settings: BeatSettings | None = None
    ) -> None:
        self.engine = engine
        self.clock = clock or DatabaseClock(engine.schedules)
        self.settings = settings or BeatSettings()
        self._decoded: dict[tuple[object, ...], StoredSchedule] = {}
        self._broken: set[tuple[str, str]] = set()  # (schedule, error) already logged

    def sync(self, definitions: list[ScheduleDefinition], source: str) -> list[ScheduleRecord]:
        """Store an app's configured schedules (``beat_schedule``, all of ``source``, which is
        ``config:<app>``); the schedules of that source no longer configured become INACTIVE."""
        return admin.store(self.engine, definitions, self.clock, deactivate_missing_from=source)

    def tick(self) -> TickReport:
        """Fire everything due now; one transaction per schedule (per batch of due times).

        A schedule that cannot fire (a row edited by hand into something undecodable, a task
        that cannot be built, a statement that fails on that row) is logged and skipped: the
        other schedules still fire. Only a lost database fails the whole tick."""
        report = TickReport()
        now = self.clock.now()
        active = ListSchedulesParams(statuses=(ScheduleStatus.ACTIVE,))
        for record in self.engine.schedules.list(active):
            try:
                schedule = self._decode(record)
                upcoming = self._fire_due(schedule, now, report)
            except DatabaseUnavailable:
                raise
            except Exception as exc:  # one bad row must not stop the others
                self._report_broken(record.name, exc)
                continue
            if upcoming is not None and (report.next_due is None or upcoming < report.next_due):
                report.next_due = upcoming
        return report

    def _fire_due(self, schedule: StoredSchedule, now: dt.datetime, report: TickReport) -> dt.datetime | None:
        """Fire what is due for one schedule; return its next due time (None: re-read first)."""
        due = plan_fires(schedule, now, self.settings.grace, self.settings.batch)
        if not due:
            return next_fire(schedule, now, self.settings.grace)
        name = schedule.record.name
        result = fire_due(self.engine, schedule, due)
        if not result.fired:
            log.debug("schedule %s was fired by another scheduler", name)
            report.lost.append(name)
            report.more_pending = True  # re-read the moved cursor at once
            return None
        inserted = set(result.inserted)
        for instant in due:
            task_id = fire_task_id(name, instant)
            if task_id in inserted:
                report.fired.append(task_id)
                log.info(
                    "fired %s due %s as task %s (version %s)",
                    name,
                    format_due(instant),
                    task_id,
                    result.application_version or "any",
                )
        report.more_pending = report.more_pending or len(due) >= self.settings.batch
        return next_due(schedule.timing, max(due[-1], floor_second(now)))

    def loop(self) -> Loop:
        """This beat as a loop, not started: a tick, then a sleep until the next due time (at
        most ``max_interval``), at once again while a backfill goes on. A failed tick (a lost
        database, say) is retried with a growing pause; the loop never dies of it."""
        first = min(self.settings.max_interval, MAX_FAILED_TICK_PAUSE)
        errors = ErrorPolicy(
            log, "beat tick failed", (DatabaseUnavailable,), backoff=Backoff(first, MAX_FAILED_TICK_PAUSE)
        )
        return Loop("pgtasks-beat", self._round, self.settings.max_interval, errors)

    def run(self, stop: threading.Event) -> None:
        """Tick until ``stop`` is set: the loop runs on a thread of its own while the calling
        thread waits for ``stop`` (``pgtasks beat`` owns that thread and that event)."""
        loop = self.loop()
        loop.start()
        stop.wait()
        if loop.stop():
            log.info("beat stopped")

    def _round(self) -> float:
        report = self.tick()
        return 0.0 if report.more_pending else self._sleep_seconds(report)

    def _sleep_seconds(self, report: TickReport) -> float:
        wait = self.settings.max_interval
        if report.next_due is not None:
            wait = min(wait, (report.next_due - self.clock.now()).total_seconds())
        return max(MIN_SLEEP, wait)

    def _report_broken(self, name: str, exc: Exception) -> None:
        key = (name, f"{type(exc).__name__}: {exc}")
        if key not in self._broken:  # once per schedule, error and process, not once per tick
            if len(self._broken) > DECODED_CACHE_SIZE:
                self._broken.clear()
            self._broken.add(key)
            log.error("schedule %s cannot fire: %s", name, key[1])

    def _decode(self, record: ScheduleRecord) -> StoredSchedule:
        key = (
            record.schedule,
            record.timezone,
            record.day_and,
            record.interval_seconds,
            record.context,
            record.options,
        )
        cached = self._decoded.get(key)
        if cached is None:
            cached = decode_schedule(record)
            if len(self._decoded) > DECODED_CACHE_SIZE:
                self._decoded.clear()
            self._decoded[key] = cached
        # The timing and arguments are shared; the row (cursor, queue, status) is this one.
        return StoredSchedule(
            record, cached.timing, cached.args, cached.kwargs, cached.priority, cached.expires
        )


@dataclass(slots=True)
class BeatThread:
    """A beat running on a thread of a worker (``pgtasks worker -B``)."""

    loop: Loop
    follower: SourceFollower | None = None

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the loop between two ticks and wait for it; False if it is still running."""
        if self.follower is not None:
            self.follower.stop()
        stopped = self.loop.stop(timeout)
        if stopped:
            log.info("beat stopped")
        return stopped


def start_beat_thread(
    engine: Engine,
    definitions: list[ScheduleDefinition],
    source: str,
    live: Sequence[LiveSource] = (),
) -> BeatThread:
    """Sync ``definitions`` (an app's ``beat_schedule``, of ``source``) and the ``live``
    sources, and run a beat on a daemon thread (following the live sources on another); stop
    it with ``BeatThread.stop`` when the worker shuts down."""
    beat = Beat(engine)
    beat.sync(definitions, source)
    follower = SourceFollower(live, beat.sync)
    follower.sync_now()
    loop = beat.loop()
    loop.start()
    follower.start()
    log.info("beat started in this worker with %d configured schedules", len(definitions))
    return BeatThread(loop, follower)
