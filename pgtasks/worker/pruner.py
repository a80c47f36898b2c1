"""Each worker deletes finished tasks past ``result_expires`` now and then, in a thread of its
own: a few batches every :data:`PRUNE_INTERVAL` seconds (started at a random point of the
first interval, so a fleet started together does not prune in step). Workers prune side by
side without waiting on each other (the batches skip rows another worker has locked)."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from pgtasks.engine.worker_api import WorkerApi
from pgtasks.sysdb.errors import DatabaseUnavailable

log = logging.getLogger("pgtasks.worker")

PRUNE_INTERVAL = 60.0
BATCHES_PER_ROUND = 20  # 20,000 tasks a minute per worker at most: keeps each round short


class Pruner:
    """A daemon thread that calls ``store.prune`` every ``interval`` seconds until stopped;
    ``on_pruned(counts)`` receives what each round deleted (for the metrics)."""

    def __init__(
        self,
        store: WorkerApi,
        interval: float = PRUNE_INTERVAL,
        on_pruned: Callable[[dict[str, int]], None] | None = None,
    ) -> None:
        self._store = store
        self.interval = interval
        self._on_pruned = on_pruned
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgtasks-prune", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def round(self) -> dict[str, int]:
        """One round: up to BATCHES_PER_ROUND batches; what it deleted, per queue."""
        try:
            deleted = self._store.prune(BATCHES_PER_ROUND)
        except DatabaseUnavailable as exc:  # the next round tries again
            log.warning("pruning finished tasks skipped: %s", exc)
            return {}
        if deleted:
            log.info("pruned %d finished tasks past result_expires: %s", sum(deleted.values()), deleted)
            if self._on_pruned is not None:
                self._on_pruned(deleted)
        return deleted

    def _run(self) -> None:
        if self._stop.wait(random.uniform(0, self.interval)):
            return
        while True:
            try:
                self.round()
            except Exception:  # a bug here must not take the worker down
                log.exception("pruning finished tasks failed")
            if self._stop.wait(self.interval):
                return
