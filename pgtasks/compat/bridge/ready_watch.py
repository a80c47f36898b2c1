"""What fulfils ``AsyncResult.then``: a thread per process that waits for the tasks
whose results have callbacks and calls each result's ``on_ready`` promise when it is ready.

Celery fires these callbacks when its result consumer hears a task's state; here the thread
runs an event loop that awaits each task's end the way ``get_async`` does (woken by the
database's notification that it finished, reading the row now and then, polling where there
are no notifications), then reads the result's Celery state: a ready one fulfils the promise,
and the callbacks run on a thread of that loop's executor. A task sent with
``ignore_result`` never reads ready, so, as in Celery, its callbacks never run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import DatabaseUnavailable

if TYPE_CHECKING:
    from pgtasks.compat.celery.result.async_result import AsyncResult

__all__ = ["ReadyWatch", "ready_watch"]

log = logging.getLogger("pgtasks.compat")

RETRY_SECONDS = 1.0  # after an outage or an error reading a watched task's state


class ReadyWatch:
    """Waits for watched results on its own event loop thread and fulfils their promises."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="pgtasks-result-then", daemon=True
        )
        self._thread.start()

    def add(self, result: AsyncResult, weak: bool = False) -> None:
        """Fulfil ``result.on_ready`` once the task is ready (held weakly with ``weak``: a
        result nobody else holds is dropped and its callbacks never run)."""
        held: Any = weakref.ref(result) if weak else (lambda: result)
        asyncio.run_coroutine_threadsafe(self._await_ready(result.app, result.id, held), self._loop)

    async def _await_ready(self, app: Any, task_id: str, held: Any) -> None:
        while True:
            try:
                # The app's engine at each wait: changed settings rebuild it.
                await app.engine.wait_async(task_id, None)
            except DatabaseUnavailable as exc:  # the wait itself rides out short outages
                log.debug("waiting for task %s for its then() callbacks: %s", task_id, exc)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            result = held()
            if result is None:
                return
            try:
                # The read, and the callbacks it runs, block: on a thread, not this loop.
                await asyncio.to_thread(result.fulfil_if_ready)
            except DatabaseUnavailable as exc:
                log.debug("reading task %s for its then() callbacks: %s", task_id, exc)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            except Exception:
                log.exception("a then() callback of task %s raised", task_id)
            return


_watches: dict[int, ReadyWatch] = {}  # by process id: a forked child starts its own
_watches_lock = threading.Lock()


def ready_watch() -> ReadyWatch:
    """This process's watch (one thread, whatever the apps and databases it waits on)."""
    with _watches_lock:
        watch = _watches.get(os.getpid())
        if watch is None:
            watch = _watches[os.getpid()] = ReadyWatch()
        return watch
