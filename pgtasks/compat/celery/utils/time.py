"""Celery's ``celery.utils.time``: time zones, aware datetimes, durations and rates, with
Celery's semantics (naive datetimes are taken as UTC unless a zone is given)."""

from __future__ import annotations

import datetime as dt
import math
import numbers
import random
import zoneinfo
from collections.abc import Callable
from typing import Any

from pgtasks.compat.celery.utils.iso8601 import parse_iso8601

__all__ = [
    "LocalTimezone",
    "delta_resolution",
    "ffwd",
    "get_exponential_backoff_interval",
    "humanize_seconds",
    "is_naive",
    "localize",
    "make_aware",
    "maybe_iso8601",
    "maybe_make_aware",
    "maybe_timedelta",
    "rate",
    "remaining",
    "timedelta_seconds",
    "timezone",
    "to_utc",
    "utcoffset",
    "weekday",
]

DAYNAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
WEEKDAYS = dict(zip(DAYNAMES, range(7), strict=True))
RATE_MODIFIER_MAP: dict[str, Callable[[float], float]] = {
    "s": lambda n: n,
    "m": lambda n: n / 60.0,
    "h": lambda n: n / 60.0 / 60.0,
}
TIME_UNITS = (("day", 60 * 60 * 24.0), ("hour", 60 * 60.0), ("minute", 60.0), ("second", 1.0))


class LocalTimezone(dt.tzinfo):
    """The system's local time zone as a tzinfo."""

    def utcoffset(self, when: dt.datetime | None) -> dt.timedelta:
        return _local_offset(when)

    def dst(self, when: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(0)

    def tzname(self, when: dt.datetime | None) -> str:
        return dt.datetime.now().astimezone().tzname() or "local"


def _local_offset(when: dt.datetime | None) -> dt.timedelta:
    moment = (when or dt.datetime.now()).replace(tzinfo=None).astimezone()
    return moment.utcoffset() or dt.timedelta(0)


class _Zones:
    """Celery's ``timezone`` object: ``timezone.utc``, ``timezone.local``,
    ``timezone.get_timezone(name)``, ``timezone.to_local(dt)``."""

    utc = zoneinfo.ZoneInfo("UTC")  # as Celery 5's (code may read app.timezone.key)

    @property
    def local(self) -> dt.tzinfo:
        return LocalTimezone()

    def get_timezone(self, zone: str | dt.tzinfo) -> dt.tzinfo:
        if isinstance(zone, str):
            return self.utc if zone.upper() == "UTC" else zoneinfo.ZoneInfo(zone)
        return zone

    def to_local(
        self, when: dt.datetime, local: dt.tzinfo | None = None, orig: dt.tzinfo | None = None
    ) -> Any:
        if is_naive(when):
            when = make_aware(when, orig or self.utc)
        return localize(when, local or self.local)

    def to_system(self, when: dt.datetime) -> dt.datetime:
        return localize(when, self.local)

    def to_local_fallback(self, when: dt.datetime) -> dt.datetime:
        return make_aware(when, self.local) if is_naive(when) else localize(when, self.local)


timezone = _Zones()


def is_naive(when: dt.datetime) -> bool:
    """True when ``when`` has no time zone."""
    return when.tzinfo is None or when.tzinfo.utcoffset(when) is None


def make_aware(when: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """The naive ``when`` as a time in ``tz``."""
    return when.replace(tzinfo=tz)


def localize(when: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """``when`` converted to ``tz`` (a naive one is taken as UTC first)."""
    if is_naive(when):
        when = make_aware(when, dt.timezone.utc)
    return when.astimezone(tz)


def to_utc(when: dt.datetime) -> dt.datetime:
    """``when`` in UTC (a naive one is taken as UTC)."""
    return make_aware(when, dt.timezone.utc) if is_naive(when) else when.astimezone(dt.timezone.utc)


def maybe_make_aware(
    when: dt.datetime, tz: dt.tzinfo | None = None, naive_as_utc: bool = True
) -> dt.datetime:
    """``when`` with a time zone: a naive one in ``tz`` (UTC by default)."""
    if is_naive(when):
        if naive_as_utc:
            when = to_utc(when)
        return localize(when, dt.timezone.utc if tz is None else tz)
    return when


def maybe_timedelta(delta: Any) -> Any:
    """Seconds as a timedelta; anything else as given."""
    if isinstance(delta, numbers.Real) and not isinstance(delta, bool):
        return dt.timedelta(seconds=float(delta))
    return delta


def timedelta_seconds(delta: dt.timedelta) -> float:
    """The seconds of ``delta``, never negative."""
    return max(delta.total_seconds(), 0)


def delta_resolution(when: dt.datetime, delta: dt.timedelta) -> dt.datetime:
    """``when`` rounded down to the resolution of ``delta`` (days, hours or minutes)."""
    seconds = delta.total_seconds()
    if seconds >= 86400:
        return when.replace(hour=0, minute=0, second=0, microsecond=0)
    if seconds >= 3600:
        return when.replace(minute=0, second=0, microsecond=0)
    if seconds >= 60:
        return when.replace(second=0, microsecond=0)
    return when


def remaining(
    start: dt.datetime, ends_in: dt.timedelta, now: Any = None, relative: bool = False
) -> dt.timedelta:
    """How long until ``start + ends_in``, from ``now`` (a datetime or a function)."""
    now = now() if callable(now) else (now or dt.datetime.now(dt.timezone.utc))
    if start.tzinfo is not None and now.tzinfo is not None and start.tzinfo != now.tzinfo:
        now = now.astimezone(start.tzinfo)
    end = start + ends_in
    if relative:
        end = delta_resolution(end, ends_in)
    left: dt.timedelta = end - now
    return left


def rate(r: Any) -> float:
    """A rate limit (``'100/m'``, ``'10/s'``, a number) as tasks per second."""
    if r:
        if isinstance(r, str):
            ops, _, modifier = r.partition("/")
            per_second: float = RATE_MODIFIER_MAP[modifier or "s"](float(ops))
            return per_second or 0
        return float(r) or 0
    return 0


def weekday(name: str) -> int:
    """The day number (``'sun'`` 0 ... ``'sat'`` 6) of a day name or its abbreviation."""
    abbreviation = name[0:3].lower()
    try:
        return WEEKDAYS[abbreviation]
    except KeyError:
        raise KeyError(name) from None


def humanize_seconds(
    secs: float, prefix: str = "", sep: str = "", now: str = "now", microseconds: bool = False
) -> str:
    """``'in 2.00 minutes'``-style text for a number of seconds."""
    secs = float(format(float(secs), ".2f"))
    for unit, divider in TIME_UNITS:
        if secs >= divider:
            w = secs / divider
            return f"{prefix}{sep}{w:.2f} {unit + ('' if w == 1 else 's')}"
    if microseconds and secs > 0.0:
        return f"{prefix}{sep}{secs:.2f} seconds"
    return now


def maybe_iso8601(when: Any) -> dt.datetime | None:
    """An ISO 8601 string as a datetime; None and datetimes as given."""
    if when is None or isinstance(when, dt.datetime):
        return when
    return parse_iso8601(str(when))


def utcoffset(time: Any = None) -> int:
    """The local zone's offset from UTC, in hours (east is negative, as Celery returns it)."""
    return -int(_local_offset(None).total_seconds() // 3600)


def get_exponential_backoff_interval(
    factor: float, retries: int, maximum: float, full_jitter: bool = False
) -> float:
    """Celery's retry backoff: ``factor * 2 ** retries`` capped at ``maximum``, optionally
    drawn uniformly below it (full jitter)."""
    countdown: float = min(maximum, factor * (2**retries))  # whole seconds for whole factors
    if full_jitter:
        countdown = random.randrange(math.floor(countdown) + 1)
    return max(0, countdown)


class ffwd:
    """A relative date (``ffwd(hour=9, weekday=0)``) added to datetimes, as Celery's crontab
    helpers use it."""

    def __init__(
        self,
        year: int | None = None,
        month: int | None = None,
        weeks: int = 0,
        weekday: int | None = None,
        day: int | None = None,
        hour: int | None = None,
        minute: int | None = None,
        second: int | None = None,
        microsecond: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.fields = {
            k: v
            for k, v in dict(
                year=year,
                month=month,
                day=day,
                hour=hour,
                minute=minute,
                second=second,
                microsecond=microsecond,
            ).items()
            if v is not None
        }
        self.weeks = weeks
        self.weekday = weekday
        self.days = kwargs.get("days", 0)

    def __radd__(self, other: dt.datetime) -> dt.datetime:
        if not isinstance(other, dt.date):
            return NotImplemented
        moved = other.replace(**self.fields) + dt.timedelta(weeks=self.weeks, days=self.days)  # type: ignore[arg-type]
        if self.weekday is not None:
            moved += dt.timedelta(days=(self.weekday - moved.weekday()) % 7)
        return moved
