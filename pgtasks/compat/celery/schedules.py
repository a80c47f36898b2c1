"""``celery.schedules``: Celery's schedule classes with Celery's constructor signatures,
``crontab``, ``schedule`` and ``solar``, turned into the native scheduler's cron, interval and
solar timings (see docs/scheduling.md).

A ``crontab`` is evaluated in the application's ``timezone`` with the DST rules of
:mod:`pgtasks.scheduler.timing`. As in Celery, when both ``day_of_month`` and ``day_of_week``
are restricted a day must match both (``crontab(0, 0, day_of_month='1-7',
day_of_week='mon')`` is the first Monday of the month); plain cron strings follow cron's rule
(either).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
from collections import namedtuple
from collections.abc import Iterable
from functools import cached_property
from typing import Any

__all__ = [
    "BaseSchedule",
    "NotSupported",
    "ParseException",
    "crontab",
    "crontab_parser",
    "maybe_schedule",
    "schedstate",
    "schedule",
    "solar",
]

from croniter import croniter

from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.celery._state import get_current_app
from pgtasks.compat.celery.crontab_parser import ParseException, crontab_parser
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.compat.celery.utils.time import humanize_seconds
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.cron import parse_cron
from pgtasks.scheduler.solar import EVENTS, SolarTiming
from pgtasks.scheduler.timing import CronTiming, IntervalTiming, Timing, check_interval, latest_due, next_due
from pgtasks.scheduler.zones import load_zone

log = logging.getLogger("pgtasks.compat")

# What Celery's ``is_due()`` returns: due now, and seconds until the next check.
schedstate = namedtuple("schedstate", ("is_due", "next"))


class BaseSchedule:
    """Celery's schedule base class, for schedules libraries define (django-celery-beat's
    ``clocked``). ``pgtasks beat`` fires crontab and interval schedules itself; a schedule of
    another class is refused when a beat syncs it, naming the class.

    ``is_due`` and ``remaining_estimate`` answer as Celery's do (for code that shows the next
    run, or drives a schedule by hand), from the same due times ``pgtasks beat`` fires, in the
    app's ``timezone``."""

    nowfun: Any = None
    _app: Any = None

    def __init__(self, nowfun: Any = None, app: Any = None) -> None:
        self.nowfun = nowfun
        self._app = app

    @property
    def app(self) -> Any:
        """The app given, else the current app."""
        return self._app if self._app is not None else get_current_app()

    @app.setter
    def app(self, app: Any) -> None:
        self._app = app

    # Read once, and settable, as Celery's (django-celery-beat's crontab sets its own tz).
    @cached_property
    def tz(self) -> dt.tzinfo:
        """The app's time zone."""
        return load_zone(self.app.zone_name)

    @cached_property
    def utc_enabled(self) -> bool:
        return flag("enable_utc", self.app.conf.get("enable_utc", True))

    def now(self) -> dt.datetime:
        return (self.nowfun or (lambda: dt.datetime.now(dt.timezone.utc)))()

    def maybe_make_aware(self, dt_: dt.datetime, naive_as_utc: bool = True) -> dt.datetime:
        """``dt_`` in the app's zone: a naive one is read in UTC (``naive_as_utc``) or on the
        app's wall clock."""
        if dt_.tzinfo is None:
            dt_ = dt_.replace(tzinfo=dt.timezone.utc if naive_as_utc else self.tz)
        return dt_.astimezone(self.tz)

    def to_local(self, dt_: dt.datetime) -> dt.datetime:
        """``dt_`` as it is with ``enable_utc`` (the default), else on the app's wall clock."""
        return dt_ if self.utc_enabled else self.maybe_make_aware(dt_)

    def timing(self, timezone: str) -> Timing:
        raise NotImplementedError("subclasses of BaseSchedule define remaining_estimate()")

    def remaining_estimate(self, last_run_at: dt.datetime) -> dt.timedelta:
        """Time from now to the first due time after ``last_run_at`` (negative when it
        passed)."""
        after = self.maybe_make_aware(last_run_at)
        due = next(iter(self.timing(str(self.tz)).instants_after(after)))
        return due - self.maybe_make_aware(self.now())

    def is_due(self, last_run_at: dt.datetime) -> schedstate:
        """``(is_due, next)``: whether a run is due now, and seconds until the next check
        (the next due time after now when it is due)."""
        remaining = max(self.remaining_estimate(last_run_at).total_seconds(), 0.0)
        if remaining == 0:
            return schedstate(True, max(self.remaining_estimate(self.now()).total_seconds(), 0.0))
        return schedstate(False, remaining)


class NotSupported(ConfigurationError):
    """A Celery scheduling feature that pgtasks does not offer."""


def _field(value: Any, name: str) -> str:
    """One crontab field as cron text: a string as given, a number, or a collection of them.
    Day and month names may be spelt out (``monday-friday``, ``January``): Celery reads a
    name by its first three letters."""
    if isinstance(value, bool):
        raise ConfigurationError(f"crontab {name} must be a string, a number or a set of them, not {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        text = value.replace(" ", "")
        if not text:
            raise ConfigurationError(f"crontab {name} is empty")
        if name in ("day_of_week", "month_of_year"):
            text = _NAME.sub(lambda word: word.group(0)[:3].lower(), text)
        return text
    if isinstance(value, Iterable):
        items = list(value)
        if not items or not all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in items):
            raise ConfigurationError(f"crontab {name} must be a non-empty set of numbers, not {value!r}")
        ordered = sorted(items, key=lambda v: (isinstance(v, str), v))
        return ",".join(str(v) for v in ordered)
    raise ConfigurationError(f"crontab {name} must be a string, a number or a set of them, not {value!r}")


_SPANS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))  # minute, hour, day, month, weekday
_NAME = re.compile(r"[A-Za-z]{4,}")  # a day or month name spelt out (three letters are cron's)


class crontab(BaseSchedule):
    """``crontab(minute='*', hour='*', day_of_week='*', day_of_month='*', month_of_year='*')``.

    Fields take cron syntax (``'*/15'``, ``'9-17'``, ``'mon-fri'``), numbers, or sets of
    numbers. Invalid fields raise ConfigurationError at once, naming the field.
    """

    def __init__(
        self,
        minute: Any = "*",
        hour: Any = "*",
        day_of_week: Any = "*",
        day_of_month: Any = "*",
        month_of_year: Any = "*",
        **kwargs: Any,
    ) -> None:
        unknown = set(kwargs) - {"app", "nowfun", "tz"}
        if unknown:
            raise TypeError(f"crontab() got unexpected keyword arguments {sorted(unknown)}")
        super().__init__(kwargs.get("nowfun"), kwargs.get("app"))
        self._orig_minute = minute
        self._orig_hour = hour
        self._orig_day_of_week = day_of_week
        self._orig_day_of_month = day_of_month
        self._orig_month_of_year = month_of_year
        parts = {
            "minute": _field(minute, "minute"),
            "hour": _field(hour, "hour"),
            "day_of_month": _field(day_of_month, "day_of_month"),
            "month_of_year": _field(month_of_year, "month_of_year"),
            "day_of_week": _field(day_of_week, "day_of_week"),
        }
        self.cron_expression = " ".join(parts.values())
        self.day_and = parts["day_of_month"] != "*" and parts["day_of_week"] != "*"
        try:
            parse_cron(self.cron_expression, self.day_and)
        except ConfigurationError as exc:
            message = str(exc).replace("field month ", "field month_of_year ")
            raise ConfigurationError(f"crontab: {message}") from None

    @classmethod
    def from_string(cls, crontab: str) -> crontab:
        """A crontab from cron's five fields: ``'*/5 9-17 * * mon-fri'`` (minute, hour, day of
        month, month, day of week)."""
        fields = crontab.split()
        if len(fields) != 5:
            raise ValueError(f"Invalid crontab string: {crontab!r}: it needs 5 fields, not {len(fields)}")
        minute, hour, day_of_month, month_of_year, day_of_week = fields
        return cls(minute, hour, day_of_week, day_of_month, month_of_year)

    def timing(self, timezone: str) -> CronTiming:
        """This crontab evaluated in ``timezone``."""
        return CronTiming.parse(self.cron_expression, timezone, self.day_and)

    def remaining_delta(
        self, last_run_at: dt.datetime, tz: Any = None, ffwd: Any = None
    ) -> tuple[dt.datetime, dt.timedelta, dt.datetime]:
        """Celery's step of ``remaining_estimate``: ``(last_run_at, delta, now)``, both times
        in the schedule's zone, where ``last_run_at + delta`` is the first due time after
        ``last_run_at`` (django-celery-beat computes a row's first run after its
        ``start_time`` so). ``tz`` and ``ffwd`` are accepted, as Celery's, and not used."""
        start = self.to_local(self.maybe_make_aware(last_run_at))
        due = next_due(self.timing(str(self.tz)), start).astimezone(start.tzinfo)
        # Both in one zone, so the difference is on the wall clock and adding it back to
        # start gives the due time again, across a change of the zone's offset too.
        return start, due - start, self.to_local(self.maybe_make_aware(self.now()))

    def is_due(self, last_run_at: dt.datetime) -> schedstate:
        """As :meth:`BaseSchedule.is_due`; and, as Celery's, with ``beat_cron_starting_deadline``
        set, a run whose latest missed due time is more than that many seconds old is not due
        (it waits for the next due time)."""
        state = super().is_due(last_run_at)
        deadline = self.app.conf.beat_cron_starting_deadline
        if not state.is_due or deadline is None:
            return state
        now = self.maybe_make_aware(self.now())
        missed = latest_due(self.timing(str(self.tz)), self.maybe_make_aware(last_run_at), now)
        if missed is not None and (now - missed).total_seconds() > float(deadline):
            return schedstate(False, state.next)
        return state

    # Celery's crontab exposes each field as the set of numbers it matches (Sunday is 0):
    # django-celery-beat's admin describes a schedule from them.
    @property
    def minute(self) -> set[int]:
        return self._expanded(0)

    @property
    def hour(self) -> set[int]:
        return self._expanded(1)

    @property
    def day_of_month(self) -> set[int]:
        return self._expanded(2)

    @property
    def month_of_year(self) -> set[int]:
        return self._expanded(3)

    @property
    def day_of_week(self) -> set[int]:
        return {day % 7 for day in self._expanded(4)}

    def _expanded(self, index: int) -> set[int]:
        low, high = _SPANS[index]
        values: list[object] = list(croniter(self.cron_expression).expanded[index])
        if values == ["*"]:
            return set(range(low, high + 1))
        return {v for v in values if isinstance(v, int)}  # not "L" (the month's last day)

    def __repr__(self) -> str:
        return f"<crontab: {self.cron_expression} (m/h/dM/MY/d)>"

    def _matches(self) -> tuple[object, ...]:
        """What the schedule matches: each field's numbers, whether a day must match both day
        fields, and the month's last day ("L", which the numbers leave out)."""
        fields = (self.minute, self.hour, self.day_of_week, self.day_of_month, self.month_of_year)
        last_day = "L" in self.cron_expression.split()[2]
        return (*(frozenset(field) for field in fields), self.day_and, last_day)

    def __eq__(self, other: object) -> bool:
        """As Celery's: equal when every field matches the same numbers
        (``crontab(minute="*/15") == crontab(minute="0,15,30,45")``)."""
        if not isinstance(other, crontab):
            return NotImplemented
        return self._matches() == other._matches()

    def __hash__(self) -> int:
        return hash(self._matches())


def _below_whole(seconds: float) -> bool:
    return math.isfinite(seconds) and (seconds < 1 or seconds != int(seconds))


def beat_seconds(run_every: object) -> int:
    """The whole seconds, at least 1, that a beat entry of period ``run_every`` (seconds or a
    timedelta) fires every: pgtasks fires schedules on whole seconds, so a fractional or
    shorter period (Celery's ``schedule(0.5)``) is rounded up, and a warning says so."""
    seconds = run_every.total_seconds() if isinstance(run_every, dt.timedelta) else run_every
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds < 0:
        raise ConfigurationError(f"a schedule's period must be 0 or more seconds, not {seconds!r}")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and _below_whole(seconds):
        whole = max(1, math.ceil(seconds))
        log.warning("a schedule every %r s fires every %d s: pgtasks fires on whole seconds", seconds, whole)
        return whole
    return check_interval(run_every)


class schedule(BaseSchedule):
    """``schedule(run_every)``: every ``run_every`` (a timedelta or seconds), at the multiples
    of the period since the Unix epoch (so every scheduler agrees on the due times)."""

    def __init__(
        self, run_every: float | dt.timedelta | None = None, relative: bool = False, **kwargs: Any
    ) -> None:
        if run_every is None:
            raise ConfigurationError("schedule(run_every) needs a period: seconds or a timedelta")
        super().__init__(kwargs.get("nowfun"), kwargs.get("app"))
        self.fire_seconds = beat_seconds(run_every)
        given = run_every.total_seconds() if isinstance(run_every, dt.timedelta) else float(run_every)
        self.seconds: float = int(given) if given == int(given) else given  # as given, as Celery's
        self.run_every = dt.timedelta(seconds=self.seconds)
        self.relative = relative

    def timing(self, timezone: str = "UTC") -> IntervalTiming:
        """The due instants (an interval ignores the zone), every :attr:`fire_seconds`."""
        return IntervalTiming(self.fire_seconds)

    @property
    def human_seconds(self) -> str:
        """The period in words (``'every 5.00 minutes'`` reads ``5.00 minutes``)."""
        return humanize_seconds(self.seconds)

    def remaining_estimate(self, last_run_at: dt.datetime) -> dt.timedelta:
        """As Celery's: the period from ``last_run_at``, less the time since."""
        return self.maybe_make_aware(last_run_at) + self.run_every - self.maybe_make_aware(self.now())

    def is_due(self, last_run_at: dt.datetime) -> schedstate:
        remaining = self.remaining_estimate(last_run_at).total_seconds()
        if remaining <= 0:
            return schedstate(True, float(self.seconds))
        return schedstate(False, remaining)

    def __repr__(self) -> str:
        return f"<freq: {self.human_seconds}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, schedule):
            return NotImplemented
        return self.seconds == other.seconds

    def __hash__(self) -> int:
        return hash(self.seconds)


class solar(BaseSchedule):
    """``solar(event, lat, lon)``: at each ``event`` (``sunrise``, ``solar_noon``, ``sunset``,
    ``dawn_civil``, ``dusk_nautical``, ... as Celery's) seen from latitude ``lat`` and longitude
    ``lon`` (:mod:`pgtasks.scheduler.solar`). Needs the ephem package, as in Celery: without it,
    ImproperlyConfigured says to install it; a bad event or place is a ValueError."""

    # Celery's name for the events it knows; django-celery-beat's tests check its model's
    # choices against it.
    _all_events = frozenset(EVENTS)

    def __init__(self, event: str, lat: float, lon: float, **kwargs: Any) -> None:
        super().__init__(kwargs.get("nowfun"), kwargs.get("app"))
        try:
            self._timing = SolarTiming.define(event, lat, lon)
        except ConfigurationError as exc:
            if "ephem" in str(exc):
                raise ImproperlyConfigured(str(exc)) from None
            raise ValueError(str(exc)) from None
        self.event, self.lat, self.lon = event, lat, lon

    def timing(self, timezone: str = "UTC") -> SolarTiming:
        """The due instants (an event is an instant: the zone plays no part)."""
        return self._timing

    def __reduce__(self) -> tuple[type, tuple[str, float, float]]:
        return self.__class__, (self.event, self.lat, self.lon)

    def __repr__(self) -> str:
        return f"<solar: {self.event} at latitude {self.lat}, longitude: {self.lon}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, solar):
            return NotImplemented
        return (self.event, self.lat, self.lon) == (other.event, other.lat, other.lon)

    def __hash__(self) -> int:
        return hash((self.event, self.lat, self.lon))


def maybe_schedule(s: Any, relative: bool = False, app: Any = None) -> Any:
    """A number of seconds or a timedelta as a ``schedule``; anything else as given."""
    if s is not None and not isinstance(s, bool) and isinstance(s, (int, float, dt.timedelta)):
        return schedule(s, relative)
    return s
