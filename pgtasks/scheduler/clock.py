"""The scheduler's clock: the database server's (the default), the machine's, or a manual one
that tests move by hand."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import Protocol

from pgtasks.engine.errors import DatabaseUnavailable
from pgtasks.scheduler.zones import UTC

log = logging.getLogger("pgtasks.beat")


class Clock(Protocol):
    """What the scheduler needs from time: the current instant."""

    def now(self) -> dt.datetime:
        """The current instant, aware, in UTC."""
        ...


class SystemClock:
    """The machine's wall clock (``time.time``). The scheduler tolerates it jumping: forward
    follows the backfill rule, backward fires nothing twice."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(UTC)


class ServerTime(Protocol):
    """What DatabaseClock reads: the system database's ``now_ms``."""

    def now_ms(self) -> int: ...


class DatabaseClock:
    """The database server's clock, so that every scheduler, on every machine, agrees on what
    is due (a beat on a machine whose clock is a minute fast would otherwise fire a minute
    early, and one that is slow would see the fires of the others as future). Each ``now``
    reads the server; while the database cannot be reached it goes on from the last reading
    with the local clock (the tick that follows fails on the database anyway and is retried)."""

    def __init__(self, server: ServerTime) -> None:
        self._server = server
        self._offset = 0.0  # server time minus local time, seconds, as last read

    def now(self) -> dt.datetime:
        try:
            self._offset = self._server.now_ms() / 1000 - time.time()
        except DatabaseUnavailable as exc:
            log.debug("database clock unavailable (%s); using the local clock", exc)
        return dt.datetime.fromtimestamp(time.time() + self._offset, UTC)


class ManualClock:
    """A clock that moves only when told (``set``/``advance``)."""

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
        """Move forward by ``seconds``; return the new instant."""
        with self._lock:
            self._now += dt.timedelta(seconds=seconds)
            return self._now
