"""Each worker deletes finished tasks past ``result_expires`` now and then, in a thread of its
own: every :data:`PRUNE_INTERVAL` seconds (the first round at a random point of the first
interval, so a fleet started together does not prune in step), batch after batch until
nothing more is due or half the interval has passed. Workers prune side by
side without waiting on each other (the batches skip rows another worker has locked)."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable

from pgtasks.engine.retention import PRUNE_BATCH
from pgtasks.engine.worker_api import WorkerApi
from pgtasks.support.loops import ErrorPolicy, Loop
from pgtasks.sysdb.errors import DatabaseUnavailable

log = logging.getLogger("pgtasks.worker")

PRUNE_INTERVAL = 60.0
BATCHES_PER_STEP = 20  # batches of PRUNE_BATCH between two looks at the round's time budget
# A round goes on while there is more to delete, for at most this share of the interval: it
# keeps up with any rate the database can delete at, and a backlog of history (retention
# just turned on) is worked off over several rounds instead of in one long one.
ROUND_BUDGET_SHARE = 0.5


class Pruner:
    """A daemon thread that calls ``store.prune`` every ``interval`` seconds until stopped;
    ``on_pruned(counts)`` receives what each round deleted (for the metrics)."""

    def __init__(
        self,
        store: WorkerApi,
        interval: float = PRUNE_INTERVAL,
        on_pruned: Callable[[dict[str, int]], None] | None = None,
        batches_per_step: int = BATCHES_PER_STEP,
    ) -> None:
        self._store = store
        self._batches_per_step = batches_per_step
        self.interval = interval
        self._on_pruned = on_pruned
        # A bug here must not take the worker down: logged, and the next round tries again.
        # The first round comes at a random point of the first interval.
        self._loop = Loop(
            "pgtasks-prune",
            self._scheduled_round,
            interval,
            ErrorPolicy(log, "pruning finished tasks failed"),
            start_after=random.uniform(0, interval),
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def round(self) -> dict[str, int]:
        """One round: batches until one comes back short (nothing more is past its age) or the
        round has used its share of the interval; what it deleted, per queue."""
        deleted: Counter[str] = Counter()
        ends = time.monotonic() + self.interval * ROUND_BUDGET_SHARE
        try:
            while not self._loop.stopping:
                step = self._store.prune(self._batches_per_step)
                deleted.update(step)
                if sum(step.values()) < self._batches_per_step * PRUNE_BATCH or time.monotonic() >= ends:
                    break
        except DatabaseUnavailable as exc:  # the next round tries again
            log.warning("pruning finished tasks skipped: %s", exc)
        if deleted:
            log.info("pruned %d finished tasks past result_expires: %s", sum(deleted.values()), dict(deleted))
            if self._on_pruned is not None:
                self._on_pruned(dict(deleted))
        return dict(deleted)

    def _scheduled_round(self) -> None:
        self.round()
