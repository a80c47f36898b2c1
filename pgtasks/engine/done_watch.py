"""Waking ``await result.get_async()`` when its task finishes: one LISTEN connection per process
and database, on the channel where the statement that records outcomes announces the ids of
the tasks it finished (see ``tasks_complete``).

A notification is a hint: the waiter reads the task's row to see it finished. Notifications
sent while the listener is reconnecting are lost, so waiters also read the row now and then
(:data:`FALLBACK_SECONDS`); where the database has no notifications (SQLite, a transaction
pooler without ``listen_url``) they poll as ``get()`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.errors import DatabaseUnavailable
from pgtasks.sysdb.interface import EnqueueListener

log = logging.getLogger("pgtasks.engine")

FALLBACK_SECONDS = 2.0  # with a listener, how often a waiter reads its row anyway
RECONNECT_DELAYS = (0.1, 0.5, 1.0, 2.0, 5.0)


class DoneWatch:
    """A listener thread and the waiters it wakes, by task id."""

    def __init__(self, database: Callable[[], SystemDatabase]) -> None:
        self._database = database  # the system database now (a forked child opens its own)
        self._lock = threading.Lock()
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.available: bool | None = None  # None until the first start()

    def start(self) -> bool:
        """Listen from now on (blocking: the first call opens the connection). False where the
        database has no notifications, so waiters must poll."""
        with self._lock:
            if self.available is not None:
                return self.available
            try:
                listener = self._database().open_done_listener()
            except DatabaseUnavailable as exc:
                log.debug("cannot listen for finished tasks yet: %s", exc)
                listener = None
                self.available = True  # the thread connects when it can; waiters fall back
            else:
                self.available = listener is not None
            if self.available:
                self._thread = threading.Thread(
                    target=self._run, args=(listener,), name="pgtasks-done-watch", daemon=True
                )
                self._thread.start()
            return self.available

    def watch(self, task_id: str) -> asyncio.Future[None]:
        """A future of the running loop that resolves when a notification names ``task_id``."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiters.setdefault(task_id, set()).add(woken)
        return woken

    def unwatch(self, task_id: str, woken: asyncio.Future[None]) -> None:
        with self._lock:
            waiting = self._waiters.get(task_id)
            if waiting is not None:
                waiting.discard(woken)
                if not waiting:
                    del self._waiters[task_id]

    def close(self) -> None:
        self._stop.set()

    def _run(self, listener: EnqueueListener | None) -> None:
        failures = 0
        while not self._stop.is_set():
            if listener is None:
                try:
                    listener = self._database().open_done_listener()
                    failures = 0
                except DatabaseUnavailable as exc:
                    delay = RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]
                    failures += 1
                    log.debug("cannot listen for finished tasks, retry in %.1fs: %s", delay, exc)
                    self._stop.wait(delay)
                    continue
                if listener is None:
                    return
            try:
                while not self._stop.is_set():
                    for payload in listener.wait(timeout=0.5):
                        self._wake(payload.split("\n"))
            except DatabaseUnavailable as exc:
                log.debug("lost the listener for finished tasks: %s", exc)
            finally:
                listener.close()
                listener = None

    def _wake(self, task_ids: list[str]) -> None:
        with self._lock:
            woken = [f for task_id in task_ids for f in self._waiters.get(task_id, ())]
        for future in woken:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
                future.get_loop().call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
