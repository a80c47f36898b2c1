"""The executor's lease: heartbeats in database time, and recovery of others' expired work.

Two loops, so that no maintenance statement shares a thread with the heartbeat: however long
a recovery, a promotion or a stray-claim check takes (a slow network, a lock held by an
operator), the lease is renewed on time.

- ``pgtasks-lease`` renews this executor's heartbeat every quarter lease (and takes a fresh
  lease when another executor found the old one expired).
- ``pgtasks-maintenance``, at the same pace: re-enqueues PENDING tasks of executors whose
  heartbeat is older than their lease (or that have no executor row at all), promotes DELAYED
  tasks that are due, runs the worker's own round (``also``) and cancels waiting tasks that
  expired.

After an outage every heartbeat is old. The recovery is held back twice: here (a gap seen
by the heartbeat loop holds it for the gap plus a lease) and in the database, which decides
at the moment the recovery runs (the ``executor_may_recover`` statement: this executor's own
lease must be live, and the hold its heartbeat set after a gap over), since a round that
passed the check here may wait out the whole outage for a connection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pgtasks.engine.worker_api import WorkerApi
from pgtasks.support.loops import ErrorPolicy, Loop
from pgtasks.sysdb.records import ExecutorInfo, RecoverStaleParams

log = logging.getLogger("pgtasks.worker")


class LeaseKeeper:
    """The heartbeat loop and the maintenance loop of one executor (see the module)."""

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
        self.beat_at: float | None = None  # time.monotonic() of the last renewed heartbeat
        # The database may be restarting: any error is taken for an outage and retried.
        self._heartbeats = Loop(
            "pgtasks-lease",
            self.renew,
            self.interval,
            ErrorPolicy(log, "heartbeat failed", (Exception,), recovered="heartbeats succeed again"),
            start_after=self.interval,
        )
        self._maintenance = Loop(
            "pgtasks-maintenance",
            self.maintain,
            self.interval,
            ErrorPolicy(log, "lease round failed", (Exception,), recovered="lease rounds succeed again"),
            start_after=self.interval,
        )

    def start(self) -> None:
        self._heartbeats.start()
        self._maintenance.start()

    def stop(self) -> None:
        self._maintenance.stop()
        self._heartbeats.stop()

    def tick(self) -> None:
        """One heartbeat and one maintenance round, on the calling thread."""
        self.renew()
        self.maintain()

    def renew(self) -> None:
        """Renew this executor's heartbeat; after a long gap, hold recovery back (see above)."""
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

    def maintain(self) -> None:
        """Recovery of others' expired work, promotion, the worker's round, expiry."""
        now = time.monotonic()
        # Recover only on a heartbeat renewed within the lease: a stale one means an outage
        # that the heartbeat loop has not yet measured (it sets _recover_from when it renews).
        beat_at = self.beat_at
        if beat_at is not None and now - beat_at <= self._lease_seconds and now >= self._recover_from:
            self._recover_others()
        self._store.promote_delayed()
        if self._also is not None:
            self._also()
        expired = self._store.expire()
        if expired:
            log.info("cancelled %d tasks that expired before they started", len(expired))

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
