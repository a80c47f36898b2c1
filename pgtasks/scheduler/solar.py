"""Solar schedules: the instants of a solar event (sunrise, solar noon, civil dusk, ...) seen
from a place on Earth, as Celery's ``celery.schedules.solar`` defines them.

The sun's position is computed by the ``ephem`` package, which the application installs, as
Celery requires it for solar schedules (``pip install ephem``); without it, defining a solar
schedule raises :class:`~pgtasks.engine.errors.ConfigurationError` naming the package.

Each event is the sun crossing a horizon (degrees below the geometric one) rising or setting,
or its transit (solar noon), with no atmospheric refraction, at sea level: the dawns and dusks
use the sun's centre (astronomical -18, nautical -12, civil -6), sunrise and sunset its upper
limb at -0:34. Near the poles an event may not happen for days (the polar night has no
sunrise): the next one is searched for day by day, up to a year ahead. Instants are whole
seconds, moved up from the event (never early).
"""

from __future__ import annotations

import datetime as dt
import decimal
import numbers
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.timing import ceil_second, floor_second
from pgtasks.scheduler.zones import UTC

# event: (horizon, ephem's method, whether the sun's centre crosses it)
EVENTS: dict[str, tuple[str, str, bool]] = {
    "dawn_astronomical": ("-18", "next_rising", True),
    "dawn_nautical": ("-12", "next_rising", True),
    "dawn_civil": ("-6", "next_rising", True),
    "sunrise": ("-0:34", "next_rising", False),
    "solar_noon": ("0", "next_transit", False),
    "sunset": ("-0:34", "next_setting", False),
    "dusk_civil": ("-6", "next_setting", True),
    "dusk_nautical": ("-12", "next_setting", True),
    "dusk_astronomical": ("-18", "next_setting", True),
}
SEARCH_DAYS = 366
_TEXT = re.compile(r"solar (?P<event>\w+) (?P<lat>\S+) (?P<lon>\S+)")


def load_ephem() -> Any:
    """The ``ephem`` module, or ConfigurationError saying to install it."""
    try:
        import ephem
    except ImportError:
        raise ConfigurationError(
            "solar schedules need the ephem package, as in Celery: pip install ephem"
        ) from None
    return ephem


@dataclass(frozen=True, slots=True)
class SolarTiming:
    """The instants of ``event`` at ``latitude``, ``longitude`` (degrees)."""

    event: str
    latitude: float
    longitude: float

    @classmethod
    def define(cls, event: object, latitude: object, longitude: object) -> SolarTiming:
        """Check the event and the place (and that ephem is installed); ConfigurationError
        names what is wrong."""
        if event not in EVENTS:
            raise ConfigurationError(f"solar event {event!r} is not one of {', '.join(sorted(EVENTS))}")
        for name, value, bound in (("latitude", latitude, 90), ("longitude", longitude, 180)):
            # a Decimal too: django-celery-beat's SolarSchedule keeps its place in DecimalFields
            number = isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, bool)
            if not number or not -bound <= float(value) <= bound:  # type: ignore[arg-type]
                raise ConfigurationError(
                    f"solar {name} must be a number from {-bound} to {bound}, not {value!r}"
                )
        load_ephem()
        return cls(str(event), float(latitude), float(longitude))  # type: ignore[arg-type]

    @classmethod
    def parse(cls, text: str) -> SolarTiming:
        """Read back what :meth:`describe` wrote (``solar sunrise 51.5 -0.12``)."""
        match = _TEXT.fullmatch(text)
        if match is None:
            raise ConfigurationError(f"stored solar schedule {text!r} is not 'solar <event> <lat> <lon>'")
        try:
            latitude, longitude = float(match["lat"]), float(match["lon"])
        except ValueError:
            raise ConfigurationError(f"stored solar schedule {text!r} has no numbers for its place") from None
        return cls.define(match["event"], latitude, longitude)

    def describe(self) -> str:
        return f"solar {self.event} {self.latitude!r} {self.longitude!r}"

    def instants_after(self, after: dt.datetime) -> Iterator[dt.datetime]:
        ephem = load_ephem()
        horizon, method, use_center = EVENTS[self.event]
        observer = ephem.Observer()
        observer.lat, observer.lon = str(self.latitude), str(self.longitude)
        observer.elevation, observer.pressure, observer.horizon = 0, 0, horizon
        sun = ephem.Sun()
        options = {"use_center": True} if use_center else {}
        start = floor_second(after)
        while True:
            search = ephem.Date(start.replace(tzinfo=None))
            for _ in range(SEARCH_DAYS):
                try:
                    found = getattr(observer, method)(sun, start=search, **options)
                    break
                except ephem.CircumpolarError:  # not today here (polar day or night)
                    search = observer.next_antitransit(sun, start=search)
            else:
                raise ConfigurationError(f"{self.describe()} does not happen within {SEARCH_DAYS} days")
            instant = ceil_second(found.datetime().replace(tzinfo=UTC))
            if instant <= start:  # the event within the second of `start`: the next one
                start += dt.timedelta(seconds=1)
                continue
            yield instant
            start = instant
