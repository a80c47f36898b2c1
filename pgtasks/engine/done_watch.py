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

from pgtasks.support.backoff import Backoff
from pgtasks.support.loops import ErrorPolicy, Loop
from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.errors import DatabaseUnavailable
from pgtasks.sysdb.interface import EnqueueListener

log = logging.getLogger("pgtasks.engine")

FALLBACK_SECONDS = 2.0  # with a listener, how often a waiter reads its row anyway
RECONNECT_BACKOFF = Backoff(first=0.1, cap=5.0)


class DoneWatch:
    """A listener thread and the waiters it wakes, by task id."""

    def __init__(self, database: Callable[[], SystemDatabase]) -> None:
        self._database = database  # the system database now (a forked child opens its own)
        self._lock = threading.Lock()
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._opened: EnqueueListener | None = None  # the listener start() opened
        # A round is one listening session; a reconnect refused is retried with backoff.
        errors = ErrorPolicy(
            log,
            "cannot listen for finished tasks",
            (DatabaseUnavailable,),
            logging.DEBUG,
            backoff=RECONNECT_BACKOFF,
        )
        self._loop = Loop("pgtasks-done-watch", self._listen, 0.0, errors)
        self.available: bool | None = None  # None until the first start()

    def start(self) -> bool:
        """Listen from now on (blocking: the first call opens the connection). False where the
        database has no notifications, so waiters must poll."""
        with self._lock:
            if self.available is not None:
                return self.available
            try:
                self._opened = self._database().open_done_listener()
                self.available = self._opened is not None
            except DatabaseUnavailable as exc:
                log.debug("cannot listen for finished tasks yet: %s", exc)
                self.available = True  # the thread connects when it can; waiters fall back
            if self.available:
                self._loop.start()
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
        self._loop.stop(timeout=0)  # the session ends within its next half-second wait

    def _listen(self) -> None:
        listener, self._opened = self._opened or self._database().open_done_listener(), None
        if listener is None:  # the database has no notifications after all: waiters poll
            self._loop.stop(timeout=0)
            return
        try:
            while not self._loop.stopping:
                for payload in listener.wait(timeout=0.5):
                    self._wake(payload.split("\n"))
        except DatabaseUnavailable as exc:
            log.debug("lost the listener for finished tasks: %s", exc)
        finally:
            listener.close()

    def _wake(self, task_ids: list[str]) -> None:
        with self._lock:
            woken = [f for task_id in task_ids for f in self._waiters.get(task_id, ())]
        for future in woken:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
                future.get_loop().call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
