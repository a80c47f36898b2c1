"""Reading the state of queues and workers from code, on App and Client (through
``TaskManagement``): what the dashboard, ``/metrics`` and ``pgtasks queue list`` show. Every
figure is read when asked, with the database server's clock; monitoring reads go to the
``read_url`` replica when there is one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pgtasks.sysdb.records import ExecutorInfo, QueueActivity, QueueLatency, QueueSettings

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine

__all__ = ["Monitoring", "QueueInfo"]

LIVE_STATES = ("ENQUEUED", "DELAYED", "PENDING")


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """One queue: its stored ``settings`` (the defaults for a queue without a row), its
    unfinished tasks by state (``counts`` always has ENQUEUED, DELAYED and PENDING), and the
    age in seconds of its oldest task waiting to start (None when none waits)."""

    settings: QueueSettings
    counts: Mapping[str, int]
    oldest_waiting_seconds: float | None

    @property
    def name(self) -> str:
        return self.settings.name


class Monitoring:
    """Queues, workers and the database clock. Needs ``self.engine``."""

    engine: Engine

    def now_ms(self) -> int:
        """The database server's clock, in epoch milliseconds: the clock every worker and
        beat goes by (task times are epoch milliseconds too)."""
        return self.engine.admin.now_ms()

    def list_queues(self) -> list[QueueInfo]:
        """Every queue that has stored settings or unfinished tasks, by name."""
        admin = self.engine.admin
        now = admin.now_ms()
        settings = {q.name: q for q in admin.queues()}
        stats = {s.name: s for s in admin.queue_stats()}
        rows = []
        for name in sorted(set(settings) | set(stats)):
            stat = stats.get(name)
            counts = dict.fromkeys(LIVE_STATES, 0)
            oldest = None
            if stat is not None:
                counts.update(stat.counts)
                if stat.oldest_waiting_ms is not None:
                    oldest = max(0.0, (now - stat.oldest_waiting_ms) / 1000)
            rows.append(QueueInfo(settings.get(name, QueueSettings(name)), counts, oldest))
        return rows

    def queue_activity(self, window_ms: int = 15 * 60_000, bucket_ms: int = 60_000) -> list[QueueActivity]:
        """How many tasks of each queue started in each ``bucket_ms`` of the last
        ``window_ms``, by their state now (bucket starts are epoch milliseconds)."""
        return self.engine.admin.queue_activity(window_ms, bucket_ms)

    def queue_latency(self, window_ms: int = 5 * 60_000, sample: int = 10_000) -> list[QueueLatency]:
        """Enqueue-to-start latency p50/p95 of each queue over the tasks started in the last
        ``window_ms`` (at most the ``sample`` latest starts per queue); a delayed task counts
        from its due time."""
        return self.engine.admin.queue_latency(window_ms, sample)

    def list_workers(self) -> list[ExecutorInfo]:
        """The live workers: those whose last heartbeat is within their lease."""
        admin = self.engine.admin
        now = admin.now_ms()
        return [e for e in admin.executors() if now - e.last_heartbeat <= e.lease_ms]
