"""Delayed tasks on time: a timer armed for the next due time of the worker's queues.

A task sent with a countdown, an eta or a retry delay waits as DELAYED. Each round of this
thread promotes what is due to ENQUEUED (waking the claim loop) and reads when the earliest
task of the worker's queues is due next, in one statement; then it sleeps until that time.
It re-reads the due time whenever that may have changed: an enqueue or a retry announced on
one of the queues (NOTIFY), or a retry this worker wrote. ``fallback`` bounds every sleep
while the worker does not hear notifications (SQLite, a lost listener), so a due time changed
by anyone else is seen within that long; while it hears them, LISTENING_FALLBACK does (a
durable wait another worker armed, as a backstop beside the heartbeat round's promotion).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pgtasks.engine.errors import DatabaseUnavailable
from pgtasks.engine.worker_api import WorkerApi
from pgtasks.support.loops import ErrorPolicy, Loop

log = logging.getLogger("pgtasks.worker")

EARLY_MARGIN_MS = 1  # the database clock moved on between the read and the sleep's end
LISTENING_FALLBACK = 1.0  # seconds: the longest sleep while notifications are heard


class DueTimer:
    """Promotes the DELAYED tasks of ``queues`` when they are due and sets ``wake``."""

    def __init__(
        self,
        store: WorkerApi,
        queues: tuple[str, ...],
        wake: threading.Event,
        fallback: float,
        listening: Callable[[], bool] = lambda: False,
    ) -> None:
        self._store = store
        self._queues = queues
        self._wake = wake
        self._listening = listening
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
        promoted, due_in_ms = self._store.promote_due(self._queues)
        if promoted:
            self._wake.set()
        longest = max(self._loop.interval, LISTENING_FALLBACK) if self._listening() else self._loop.interval
        if due_in_ms is None:
            return longest
        return min(longest, (due_in_ms + EARLY_MARGIN_MS) / 1000)
