"""When a schedule is due: the UTC instants of a cron expression in its zone, or of an interval.

The daylight-saving rules (see docs/scheduling.md):

- A local time that does not exist (spring forward, or a day a zone skipped) fires once, at
  the first instant after the gap, i.e. the moment of the transition. Several skipped times
  fire once together; a time that is due anyway at that instant is not fired twice.
- A local time that happens twice (fall back) fires once, at its first occurrence, unless the
  hour field is ``*``: such a schedule follows elapsed time and fires in both passes (an
  hourly or every-five-minutes job keeps running through the repeated hour).

Whatever the zone does, the instants produced strictly increase, so none repeats.
Interval schedules fire at the multiples of their period since the Unix epoch (UTC), or since
an anchor instant (django-celery-beat's rows): every scheduler process computes the same
instants without talking to the others.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from croniter import CroniterBadDateError

from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.cron import CronExpression, parse_cron
from pgtasks.scheduler.zones import UTC, TransitionFinder, load_zone, to_local

ONE_SECOND = dt.timedelta(seconds=1)
# Windows tried, smallest first, when looking for the latest due time before an instant.
_LOOKBACK = tuple(
    dt.timedelta(seconds=s) for s in (60, 3600, 86400, 32 * 86400, 367 * 86400, 9 * 367 * 86400)
)


class Timing(Protocol):
    """The due instants of a schedule."""

    def instants_after(self, after: dt.datetime) -> Iterator[dt.datetime]:
        """Due instants (aware, UTC, whole seconds) strictly after ``after``, ascending."""
        ...

    def describe(self) -> str: ...


def floor_second(instant: dt.datetime) -> dt.datetime:
    """An aware UTC instant without its fraction of a second."""
    if instant.tzinfo is None:
        raise ValueError("instants must be timezone-aware")
    return instant.astimezone(UTC).replace(microsecond=0)


@dataclass(frozen=True, slots=True)
class CronTiming:
    """A cron expression evaluated on the wall clock of ``timezone``."""

    expression: CronExpression
    timezone: str = "UTC"

    @classmethod
    def parse(cls, text: str, timezone: str = "UTC", day_and: bool = False) -> CronTiming:
        """Validate the expression and the zone; raise ConfigurationError naming what is wrong."""
        load_zone(timezone)
        timing = cls(parse_cron(text, day_and), timezone)
        try:
            next_due(timing, dt.datetime.now(UTC))
        except CroniterBadDateError:
            raise ConfigurationError(f"cron expression {text!r} never matches a date") from None
        return timing

    def describe(self) -> str:
        days = " (days: both)" if self.expression.day_and else ""
        return f"cron {self.expression.text!r} {self.timezone}{days}"

    def instants_after(self, after: dt.datetime) -> Iterator[dt.datetime]:
        zone = load_zone(self.timezone)
        start = floor_second(after)
        last = start
        segment = TransitionFinder(zone, start)
        matches = self.expression.iterator(to_local(zone, start))
        while True:
            local: dt.datetime = matches.get_next(dt.datetime)
            instant = (local - segment.offset).replace(tzinfo=UTC)
            transition = segment.transition_until(instant)
            if transition is None:
                if self._fires(zone, local, instant) and instant > last:
                    last = instant
                    yield instant
                continue
            before = segment.offset
            segment.reset(transition)
            # `local` is the first match at or after the wall time where the old offset ended;
            # if it lies in the skipped range it fires at the transition.
            skipped_until = (transition + segment.offset).replace(tzinfo=None)
            if segment.offset > before and local < skipped_until and transition > last:
                last = transition
                yield transition
            matches = self.expression.iterator(skipped_until - ONE_SECOND)

    def _fires(self, zone: dt.tzinfo, local: dt.datetime, instant: dt.datetime) -> bool:
        """False for the second occurrence of a repeated local time (unless the hour is `*`)."""
        if self.expression.hour_is_wildcard:
            return True
        first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
        return first >= instant


@dataclass(frozen=True, slots=True)
class IntervalTiming:
    """Every ``seconds`` seconds, at the multiples of the period since the Unix epoch shifted by
    ``offset`` seconds, and none before ``start`` (when given). An interval anchored on an
    instant (Celery's ``last_run_at``, django-celery-beat's ``start_time``) is the offset of
    that instant, so that every scheduler computes the same instants."""

    seconds: int
    offset: int = 0  # 0 <= offset < seconds
    start: dt.datetime | None = None  # aware, whole seconds

    def __post_init__(self) -> None:
        check_interval(self.seconds)

    @classmethod
    def anchored(cls, seconds: int, anchor: dt.datetime, start: dt.datetime | None = None) -> IntervalTiming:
        """The instants ``anchor + k * seconds``, none before ``start`` (both moved to the next
        whole second when they have a fraction of one: never early)."""
        offset = int(ceil_second(anchor).timestamp()) % seconds
        return cls(seconds, offset, None if start is None else ceil_second(start))

    @classmethod
    def parse(cls, seconds: int, text: str) -> IntervalTiming:
        """Read back what :meth:`describe` wrote (``every 5s``, ``every 5s +3s``, ``every 5s +3s
        from 2026-11-22T10:15:03Z``)."""
        match = _INTERVAL_TEXT.fullmatch(text or f"every {seconds}s")
        if match is None or int(match["every"]) != seconds:
            raise ConfigurationError(
                f"stored interval {text!r} is not 'every {seconds}s [+Ns] [from <time>]'"
            )
        start = (
            dt.datetime.strptime(match["start"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            if match["start"]
            else None
        )
        return cls(seconds, int(match["offset"] or 0), start)

    def describe(self) -> str:
        text = f"every {self.seconds}s"
        if self.offset:
            text += f" +{self.offset}s"
        if self.start is not None:
            text += f" from {self.start.strftime('%Y-%m-%dT%H:%M:%SZ')}"
        return text

    def instants_after(self, after: dt.datetime) -> Iterator[dt.datetime]:
        lowest = int(floor_second(after).timestamp()) + 1
        if self.start is not None:
            lowest = max(lowest, int(self.start.timestamp()))
        step = -((self.offset - lowest) // self.seconds)  # the first multiple at or after lowest
        while True:
            yield dt.datetime.fromtimestamp(self.offset + step * self.seconds, UTC)
            step += 1


_INTERVAL_TEXT = re.compile(r"every (?P<every>\d+)s(?: \+(?P<offset>\d+)s)?(?: from (?P<start>\S+Z))?")


def ceil_second(instant: dt.datetime) -> dt.datetime:
    """An aware UTC instant moved up to the next whole second, if it has a fraction of one."""
    return floor_second(instant) + (ONE_SECOND if instant.microsecond else dt.timedelta())


def check_interval(seconds: object) -> int:
    """A period in whole seconds >= 1 (a float such as 30.0 is accepted)."""
    if isinstance(seconds, dt.timedelta):
        seconds = seconds.total_seconds()
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ConfigurationError(f"interval must be a number of seconds or a timedelta, not {seconds!r}")
    if seconds != seconds or seconds < 1 or seconds != int(seconds) or seconds > 100 * 366 * 86400:
        raise ConfigurationError(
            f"interval must be a whole number of seconds from 1 to a century, not {seconds!r}"
        )
    return int(seconds)


def due_between(timing: Timing, after: dt.datetime, until: dt.datetime, limit: int) -> list[dt.datetime]:
    """Up to ``limit`` due instants in ``(after, until]``, oldest first."""
    found: list[dt.datetime] = []
    if limit <= 0:
        return found
    for instant in timing.instants_after(after):
        if instant > until:
            break
        found.append(instant)
        if len(found) >= limit:
            break
    return found


def next_due(timing: Timing, after: dt.datetime) -> dt.datetime:
    """The first due instant strictly after ``after``."""
    return next(iter(timing.instants_after(after)))


def latest_due(timing: Timing, after: dt.datetime, until: dt.datetime) -> dt.datetime | None:
    """The latest due instant in ``(after, until]``, or None; looks back through growing windows
    so that a frequent schedule after a long outage does not enumerate the whole outage."""
    for window in _LOOKBACK:
        start = max(after, until - window)
        latest = None
        for instant in timing.instants_after(start):
            if instant > until:
                break
            latest = instant
        if latest is not None or start == after:
            return latest
    return latest_in_full(timing, after, until)


def latest_in_full(timing: Timing, after: dt.datetime, until: dt.datetime) -> dt.datetime | None:
    """The latest due instant in ``(after, until]`` by enumerating all of them."""
    latest = None
    for instant in timing.instants_after(after):
        if instant > until:
            break
        latest = instant
    return latest
