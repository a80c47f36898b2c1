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
from pgtasks.support.backoff import Backoff
from pgtasks.support.loops import ErrorPolicy, Loop

log = logging.getLogger("pgtasks.worker")

RECONNECT_BACKOFF = Backoff(first=0.1, cap=5.0)


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
        self.listening = threading.Event()
        self._opened: EnqueueListener | None = None  # the listener start() opened
        # A round is one listening session: a lost one ends it, and the next reconnects at once;
        # a reconnect refused is retried with backoff, warned about once per outage.
        errors = ErrorPolicy(
            log,
            "cannot listen for new tasks (polling meanwhile)",
            (DatabaseUnavailable,),
            backoff=RECONNECT_BACKOFF,
        )
        self._loop = Loop("pgtasks-listen", self._listen, 0.0, errors)

    def start(self) -> bool:
        """Start listening; False where the database has no notifications (poll only)."""
        try:
            self._opened = self._store.open_listener()
            if self._opened is None:
                return False
        except DatabaseUnavailable as exc:
            log.warning("cannot listen for new tasks yet (polling meanwhile): %s", exc)
        self._loop.start()
        return True

    def stop(self) -> None:
        self._loop.stop(timeout=0)  # the session ends within its next half-second wait

    def _listen(self) -> None:
        listener, self._opened = self._opened or self._store.open_listener(), None
        if listener is None:  # the database has no notifications after all: poll only
            self._loop.stop(timeout=0)
            return
        self.listening.set()
        try:
            while not self._loop.stopping:
                if listener.wait(timeout=0.5) & self._queues:
                    self._wake.set()
                    if self._also is not None:
                        self._also()
        except DatabaseUnavailable as exc:
            log.warning("lost the listener connection (polling meanwhile): %s", exc)
        finally:
            self.listening.clear()
            listener.close()
