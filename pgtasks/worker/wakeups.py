"""Waking an idle worker when a task is enqueued on one of its queues (LISTEN/NOTIFY).

Enqueuing transactions send one NOTIFY per queue, delivered when they commit; PostgreSQL
folds identical notifications of one transaction into one. Polling stays as the fallback
(and is the only mode on SQLite), so a lost listener costs latency, never tasks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pgtasks.engine.errors import DatabaseUnavailable
from pgtasks.engine.worker_api import EnqueueListener, WorkerApi

log = logging.getLogger("pgtasks.worker")

RECONNECT_DELAYS = (0.1, 0.5, 1.0, 2.0, 5.0)


class WakeOnEnqueue:
    """A thread that sets ``wake`` (and calls ``also``) whenever one of ``queues`` is announced."""

    def __init__(
        self,
        store: WorkerApi,
        queues: tuple[str, ...],
        wake: threading.Event,
        also: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._queues = set(queues)
        self._wake = wake
        self._also = also
        self._stop = threading.Event()
        self.listening = threading.Event()

    def start(self) -> bool:
        """Start listening; False where the database has no notifications (poll only)."""
        first: EnqueueListener | object | None
        try:
            first = self._store.open_listener()
        except DatabaseUnavailable as exc:
            log.warning("cannot listen for new tasks yet (polling meanwhile): %s", exc)
            first = _NOT_YET
        if first is None:
            return False
        self._thread = threading.Thread(target=self._run, args=(first,), name="pgtasks-listen", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stop.set()

    def _run(self, listener: EnqueueListener | object) -> None:
        failures = 0
        while not self._stop.is_set():
            if not isinstance(listener, EnqueueListener):
                try:
                    listener = self._store.open_listener()
                    failures = 0
                except DatabaseUnavailable as exc:
                    delay = RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]
                    failures += 1
                    log.log(
                        logging.WARNING if failures == 1 else logging.DEBUG,  # once per outage
                        "cannot listen for new tasks (polling meanwhile), retry in %.1fs: %s",
                        delay,
                        exc,
                    )
                    self._stop.wait(delay)
                    continue
            assert isinstance(listener, EnqueueListener)
            self.listening.set()
            try:
                while not self._stop.is_set():
                    if listener.wait(timeout=0.5) & self._queues:
                        self._wake.set()
                        if self._also is not None:
                            self._also()
            except DatabaseUnavailable as exc:
                log.warning("lost the listener connection (polling meanwhile): %s", exc)
            finally:
                self.listening.clear()
                listener.close()
                listener = _NOT_YET


_NOT_YET = object()
