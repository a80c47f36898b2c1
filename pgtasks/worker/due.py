"""Delayed tasks on time: a timer armed for the next due time of the worker's queues.

A task sent with a countdown, an eta or a retry delay waits as DELAYED. This thread reads
when the earliest one of the worker's queues is due (one indexed query), sleeps until then,
promotes it to ENQUEUED and wakes the claim loop. It re-reads the due time whenever that may
have changed: an enqueue announced on one of the queues (NOTIFY), or a retry this worker
wrote. ``fallback`` bounds every sleep, so a due time changed by anyone else (another
worker's retry, SQLite without notifications) is seen within that long.
"""

from __future__ import annotations

import logging
import threading

from pgtasks.engine.errors import DatabaseUnavailable
from pgtasks.engine.worker_api import WorkerApi
from pgtasks.support.loops import ErrorPolicy, Loop

log = logging.getLogger("pgtasks.worker")

EARLY_MARGIN_MS = 1  # the database clock moved on between the read and the sleep's end


class DueTimer:
    """Promotes the DELAYED tasks of ``queues`` when they are due and sets ``wake``."""

    def __init__(
        self, store: WorkerApi, queues: tuple[str, ...], wake: threading.Event, fallback: float
    ) -> None:
        self._store = store
        self._queues = queues
        self._wake = wake
        # Outages are the claim loop's to report: a debug line here. Never let the timer die of
        # anything else either: the maintenance round promotes meanwhile.
        errors = ErrorPolicy(log, "reading the next due time failed", (DatabaseUnavailable,), logging.DEBUG)
        self._loop = Loop("pgtasks-due", self._round, fallback, errors)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def poke(self) -> None:
        """The next due time may have changed: read it again now."""
        self._loop.poke()

    def _round(self) -> float:
        """Promote what is due; the seconds until the next due time (at most the fallback)."""
        if self._store.promote_delayed():
            self._wake.set()
        due_in_ms = self._store.next_due(self._queues)
        if due_in_ms is None:
            return self._loop.interval
        return min(self._loop.interval, (due_in_ms + EARLY_MARGIN_MS) / 1000)
