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
        self._fallback = fallback
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgtasks-due", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        self._thread.join(timeout=10)

    def poke(self) -> None:
        """The next due time may have changed: read it again now."""
        self._changed.set()

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            self._changed.clear()
            try:
                if self._store.promote_delayed():
                    self._wake.set()
                due_in_ms = self._store.next_due(self._queues)
                failing = False
            except DatabaseUnavailable as exc:  # the claim loop reports outages; stay quiet
                if not failing:
                    log.debug("cannot read the next due time: %s", exc)
                failing = True
                due_in_ms = None
            except Exception:  # never let the timer die: the lease round promotes meanwhile
                log.exception("reading the next due time failed")
                due_in_ms = None
            wait = self._fallback
            if due_in_ms is not None:
                wait = min(wait, (due_in_ms + EARLY_MARGIN_MS) / 1000)
            self._changed.wait(wait)
