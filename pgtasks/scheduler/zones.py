"""Time zones: validation, and finding the instants where a zone's UTC offset changes.

zoneinfo does not expose its transitions, so they are found by probing the offset: one probe
every six hours, then a binary search to the second when two probes differ. This assumes a
zone never changes its offset twice within six hours and back again, which holds for every
zone in the tz database.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pgtasks.engine.errors import ConfigurationError

UTC = dt.timezone.utc
PROBE_STEP = dt.timedelta(hours=6)
ONE_SECOND = dt.timedelta(seconds=1)


def load_zone(name: str) -> ZoneInfo:
    """The zone called ``name`` (IANA name such as ``Europe/Paris``), or ConfigurationError."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"timezone must be an IANA zone name such as 'Europe/Paris', not {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(
            f"unknown timezone {name!r}: use an IANA zone name such as 'Europe/Paris' or 'UTC'"
        ) from None


def offset_at(zone: ZoneInfo, instant: dt.datetime) -> dt.timedelta:
    """The zone's UTC offset at an aware instant."""
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


def to_local(zone: ZoneInfo, instant: dt.datetime) -> dt.datetime:
    """The naive local wall-clock time of an aware instant."""
    return instant.astimezone(zone).replace(tzinfo=None)


class TransitionFinder:
    """Finds the next offset change after a point, remembering what it has already probed."""

    def __init__(self, zone: ZoneInfo, start: dt.datetime) -> None:
        self.zone = zone
        self.reset(start)

    def reset(self, start: dt.datetime) -> None:
        """Start a new segment of constant offset at ``start``."""
        self.offset = offset_at(self.zone, start)
        self._clear_until = start  # no change in (start, _clear_until]
        self._transition: dt.datetime | None = None  # the first change, once found

    def transition_until(self, until: dt.datetime) -> dt.datetime | None:
        """The first instant in the segment, up to ``until``, where the offset changes."""
        while self._transition is None and self._clear_until < until:
            probe = self._clear_until + PROBE_STEP
            if offset_at(self.zone, probe) == self.offset:
                self._clear_until = probe
            else:
                self._transition = self._search(self._clear_until, probe)
        if self._transition is not None and self._transition <= until:
            return self._transition
        return None

    def _search(self, same: dt.datetime, different: dt.datetime) -> dt.datetime:
        """Binary search to the second (transitions fall on whole seconds)."""
        while different - same > ONE_SECOND:
            middle = same + dt.timedelta(seconds=(different - same).total_seconds() // 2)
            if offset_at(self.zone, middle) == self.offset:
                same = middle
            else:
                different = middle
        return different
