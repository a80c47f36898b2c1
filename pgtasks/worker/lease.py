"""The executor's lease: heartbeats in database time, and recovery of others' expired work."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from pgtasks.engine.worker_api import WorkerApi
from pgtasks.sysdb.records import ExecutorInfo, RecoverStaleParams

log = logging.getLogger("pgtasks.worker")


class LeaseKeeper:
    """A background thread that, every ``interval`` seconds: renews this executor's
    heartbeat, re-enqueues PENDING tasks of executors whose heartbeat is older than the lease
    (or that have no executor row at all), promotes DELAYED tasks that are due, and cancels
    waiting tasks that expired; ``also`` runs in the same round (the worker re-reads its
    queues' settings there)."""

    def __init__(
        self,
        store: WorkerApi,
        info: ExecutorInfo,
        lease_seconds: float,
        also: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._also = also
        self._info = info
        self._lease_seconds = lease_seconds
        # After an outage every executor's heartbeat is old, and each renews it only once it
        # reconnects: its connection pool retries with a backoff that grows with the outage,
        # so after D seconds without the database it may take up to about D more. Recovering
        # others' tasks sooner would take running tasks from live workers: after D seconds
        # without a renewed heartbeat (rounds that failed, or one heartbeat that waited the
        # outage out), recovery waits D + one lease (time.monotonic() from which it runs).
        self._recover_from = 0.0
        self.interval = max(0.05, lease_seconds / 4)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgtasks-lease", daemon=True)
        self.beat_at: float | None = None  # time.monotonic() of the last renewed heartbeat

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def tick(self) -> None:
        """One round of heartbeat, recovery of others' expired work and promotion."""
        renewed = self._store.heartbeat(self._info.executor_id)
        now = time.monotonic()
        gap = None if self.beat_at is None else now - self.beat_at
        if gap is not None and gap > self._lease_seconds:
            log.warning(
                "no heartbeat renewed for %.0fs; recovering other executors' tasks in %.0fs, once "
                "they have reconnected and renewed theirs",
                gap,
                gap + self._lease_seconds,
            )
            self._recover_from = now + gap + self._lease_seconds
        if not renewed:
            # Another executor found our heartbeat too old and recovered our tasks; our
            # fenced writes for them will be refused. Take a fresh lease for new work.
            log.warning(
                "executor %s lost its lease; its running tasks were recovered elsewhere",
                self._info.executor_id,
            )
            self._store.register_executor(self._info)
        self.beat_at = now
        if now >= self._recover_from:
            self._recover_others()
        self._store.promote_delayed()
        if self._also is not None:
            self._also()
        expired = self._store.expire()
        if expired:
            log.info("cancelled %d tasks that expired before they started", expired)

    def _recover_others(self) -> None:
        # Each executor's lease is judged by its own length (stored with its heartbeat).
        report = self._store.recover_stale(RecoverStaleParams(exclude_executor_id=self._info.executor_id))
        if report.requeued:
            log.warning("recovered %d tasks of executors whose lease expired", len(report.requeued))
        if report.dead_lettered:
            log.error(
                "dead-lettered %d tasks that exceeded max_recovery_attempts: %s",
                len(report.dead_lettered),
                ", ".join(report.dead_lettered[:10]),
            )

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception as exc:  # the database may be restarting: keep trying
                # One warning per outage, not one per round.
                log.log(logging.DEBUG if failing else logging.WARNING, "lease round failed: %s", exc)
                failing = True
            else:
                if failing:
                    log.warning("lease rounds succeed again")
                failing = False
