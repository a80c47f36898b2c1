"""A warning, once per queue per process, when tasks are sent to a queue no worker consumes.

``apply_async(queue="typo")`` is accepted (a worker for that queue may start later) but would
otherwise wait forever without a word. The live workers' queues are read from the executors
table at most every ``REFRESH_SECONDS``, and a queue is decided once: a queue seen served is
never checked again, one warned about is never warned about again. So a send pays a set lookup,
and a query only while a queue it uses is still undecided."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from pgtasks.sysdb.errors import PgtasksError
from pgtasks.sysdb.records import ExecutorInfo

log = logging.getLogger("pgtasks")

REFRESH_SECONDS = 5.0


class QueueWatch:
    """Remembers which queues were found served or warned about; ``check`` after a send."""

    def __init__(self, executors: Callable[[], list[ExecutorInfo]]) -> None:
        self._executors = executors
        self._decided: set[str] = set()
        self._lock = threading.Lock()
        self._served: frozenset[str] = frozenset()
        self._workers = 0
        self._read_at: float | None = None

    def check(self, queues: Iterable[str]) -> None:
        """Warn about each of ``queues`` that registered workers exist for but none consumes."""
        undecided = [q for q in queues if q not in self._decided]
        if not undecided:
            return
        with self._lock:
            now = time.monotonic()
            if self._read_at is None or now - self._read_at >= REFRESH_SECONDS:
                try:
                    found = self._executors()
                except PgtasksError as exc:  # the send succeeded: a failed check must not fail it
                    log.debug("could not read the workers' queues: %s", exc)
                    return
                self._served = frozenset(q for e in found for q in e.queues)
                self._workers, self._read_at = len(found), now
            if not self._workers:
                return  # no worker yet: nothing to compare with, decide later
            for queue in undecided:
                if queue in self._decided:
                    continue
                self._decided.add(queue)
                if queue not in self._served:
                    log.warning(
                        "task sent to queue %r, which none of the %d registered workers consumes "
                        "(they consume %s); it waits until a worker runs with -Q %s",
                        queue,
                        self._workers,
                        ", ".join(sorted(self._served)) or "nothing",
                        queue,
                    )
