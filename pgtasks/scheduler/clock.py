"""The scheduler's clock: the system's wall clock, or a manual one that tests move by hand."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Protocol

UTC = dt.timezone.utc


class Clock(Protocol):
    """What the scheduler needs from time: the current instant and a stoppable sleep."""

    def now(self) -> dt.datetime:
        """The current instant, aware, in UTC."""
        ...

    def sleep(self, seconds: float, stop: threading.Event) -> None:
        """Wait ``seconds`` or until ``stop`` is set."""
        ...


class SystemClock:
    """The machine's wall clock (``time.time``). The scheduler tolerates it jumping: forward
    follows the backfill rule, backward fires nothing twice."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(UTC)

    def sleep(self, seconds: float, stop: threading.Event) -> None:
        stop.wait(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when told (``set``/``advance``); ``sleep`` returns at once."""

    def __init__(self, start: dt.datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._now

    def set(self, instant: dt.datetime) -> None:
        """Jump to ``instant`` (forward or backward, like a wall clock being corrected)."""
        if instant.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        with self._lock:
            self._now = instant.astimezone(UTC)

    def advance(self, seconds: float) -> dt.datetime:
        with self._lock:
            self._now += dt.timedelta(seconds=seconds)
            return self._now

    def sleep(self, seconds: float, stop: threading.Event) -> None:
        return None
