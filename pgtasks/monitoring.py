"""Reading the state of queues and workers from code, on App and Client (through
``TaskManagement``): what the dashboard, ``/metrics`` and ``pgtasks queue list`` show. Every
figure is read when asked, with the database server's clock; monitoring reads go to the
``read_url`` replica when there is one."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.records import (
    ExecutorInfo,
    QueueActivity,
    QueueLatency,
    QueueSettings,
    RecentTasksParams,
    Status,
)
from pgtasks.task_info import TaskInfo

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine

__all__ = ["Monitoring", "QueueInfo"]

LIVE_STATES = ("ENQUEUED", "DELAYED", "PENDING")
RECENT_CHUNK = 200  # tasks loaded at once by recent_tasks


def epoch_ms(value: dt.datetime | None) -> int | None:
    """A datetime (naive: UTC) in epoch milliseconds; None stays None."""
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        raise ConfigurationError(f"a time filter must be a datetime, not {type(value).__name__} ({value!r})")
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return round(value.timestamp() * 1000)


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
        for what, value in (("window_ms", window_ms), ("bucket_ms", bucket_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**53:
                raise ConfigurationError(
                    f"{what} must be a positive whole number of milliseconds, not {value!r}"
                )
        return self.engine.admin.queue_activity(window_ms, bucket_ms)

    def queue_latency(self, window_ms: int = 5 * 60_000, sample: int = 10_000) -> list[QueueLatency]:
        """Enqueue-to-start latency p50/p95 of each queue over the tasks started in the last
        ``window_ms`` (at most the ``sample`` latest starts per queue); a delayed task counts
        from its due time."""
        return self.engine.admin.queue_latency(window_ms, sample)

    def recent_tasks(
        self,
        window: int = 100_000,
        order_by: str = "updated",
        descending: bool = True,
        status: Sequence[str | Status] = (),
        status_order: Sequence[str | Status] = (),
        name: str | None = None,
        worker: str | None = None,
        received_after: dt.datetime | None = None,
        received_before: dt.datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[TaskInfo]:
        """The recent tasks, as Flower lists the tasks it holds in memory: the ``window``
        newest by creation and every running (PENDING) one, filtered by ``status``, task
        ``name`` and ``worker`` (both case-insensitive) and by when a worker received them
        (the claim; a DELAYED task's creation; a task never received passes), ordered by
        ``order_by`` (``updated``: the last change, ``name``, ``status`` in the order
        ``status_order`` gives, ``received``, ``started``) with ties by id. Loaded lazily in
        chunks, so reading only the first few costs only them; ``limit`` and ``offset`` cut
        the listing in the database."""
        if not isinstance(window, int) or window < 1:
            raise ConfigurationError(f"window must be a positive integer, not {window!r}")
        if limit is not None and limit < 0:
            raise ConfigurationError(f"limit must be >= 0, not {limit!r}")
        params = RecentTasksParams(
            window=window,
            order=order_by,
            descending=descending,
            status=tuple(Status(str(s)) for s in status),
            status_order=tuple(Status(str(s)) for s in status_order),
            name=name,
            executor_id=worker,
            received_after_epoch_ms=epoch_ms(received_after),
            received_before_epoch_ms=epoch_ms(received_before),
            limit=limit,
            offset=max(0, offset),
        )
        admin = self.engine.admin
        ids = admin.recent_task_ids(params)
        for start in range(0, len(ids), RECENT_CHUNK):
            chunk = ids[start : start + RECENT_CHUNK]
            found = {r.task_id: r for r in admin.tasks_by_id(chunk)}
            yield from (TaskInfo.of(found[i]) for i in chunk if i in found)  # pruned meanwhile: skipped

    def recent_task_names(self, window: int = 100_000) -> list[str]:
        """The sorted names of the tasks workers received among the ``window`` newest."""
        return self.engine.admin.recent_task_names(window)

    def all_workers(self) -> list[tuple[ExecutorInfo, bool]]:
        """Every registered worker, live or not, each with whether its heartbeat is within
        its lease (a worker that stopped cleanly has no row any more)."""
        admin = self.engine.admin
        now = admin.now_ms()
        return [(e, now - e.last_heartbeat <= e.lease_ms) for e in admin.executors()]

    def list_workers(self) -> list[ExecutorInfo]:
        """The live workers: those whose last heartbeat is within their lease."""
        admin = self.engine.admin
        now = admin.now_ms()
        return [e for e in admin.executors() if now - e.last_heartbeat <= e.lease_ms]
