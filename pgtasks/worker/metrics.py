"""Prometheus metrics of one worker process (``pgtasks worker --metrics-port N``).

Counters of started, succeeded, failed and retried tasks (by queue and task name), histograms
of run time and of enqueue-to-start latency (by queue), and gauges of running tasks and pool
size, served at ``GET /metrics`` on a daemon thread. Everything is counted in the worker's
main process, where claims are dispatched and outcomes arrive from every pool (prefork
children included), so the figures are exact without prometheus-client's multiprocess mode.
prometheus-client comes with the optional ``dashboard`` extra.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.records import Outcome, Status, TaskRecord
from pgtasks.worker.endpoint import Endpoint, Route

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger("pgtasks.worker")

# Tasks are usually short: fine buckets below a second, coarse ones up to ten minutes.
RUNTIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ConfigurationError(
            "--metrics-port needs prometheus-client: pip install 'pgtasks[dashboard]'"
        ) from None
    return prometheus_client


@dataclass(frozen=True, slots=True)
class _Series:
    """The labelled children of one (queue, task name)."""

    started: Any
    succeeded: Any
    failed: Any
    retried: Any
    runtime: Any
    latency: Any


class WorkerMetrics:
    """The worker's counters, in a registry of their own. ``started`` and ``finished`` are the
    hooks the worker calls; each is a few label look-ups and increments."""

    def __init__(self, running: Callable[[], int], pool_size: int) -> None:
        prom = _prometheus()
        self.registry: CollectorRegistry = prom.CollectorRegistry(auto_describe=True)
        labels = ("queue", "task")
        r = self.registry
        self._started = prom.Counter("pgtasks_tasks_started", "Tasks whose body started", labels, registry=r)
        self._succeeded = prom.Counter("pgtasks_tasks_succeeded", "Tasks that succeeded", labels, registry=r)
        self._failed = prom.Counter("pgtasks_tasks_failed", "Tasks that ended in ERROR", labels, registry=r)
        self._retried = prom.Counter(
            "pgtasks_tasks_retried", "Runs that ended asking to run again (retry)", labels, registry=r
        )
        self._runtime = prom.Histogram(
            "pgtasks_task_runtime_seconds",
            "Seconds a task's body ran (every outcome)",
            ("queue",),
            buckets=RUNTIME_BUCKETS,
            registry=r,
        )
        self._latency = prom.Histogram(
            "pgtasks_task_enqueue_to_start_seconds",
            "Seconds from a task being due (enqueued, or its delay over) to a worker claiming it",
            ("queue",),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        running_gauge = prom.Gauge("pgtasks_worker_running_tasks", "Tasks running in this worker", registry=r)
        running_gauge.set_function(running)
        pool = prom.Gauge("pgtasks_worker_pool_size", "Concurrency of this worker's pool", registry=r)
        pool.set(pool_size)
        self._by_task: dict[tuple[str, str], _Series] = {}
        self._pruned = prom.Counter(
            "pgtasks_tasks_pruned",
            "Finished tasks this worker deleted past result_expires",
            ("queue",),
            registry=r,
        )

    def pruned(self, counts: dict[str, int]) -> None:
        """A pruning round deleted ``counts`` tasks per queue."""
        for queue, n in counts.items():
            self._pruned.labels(queue=queue).inc(n)

    def started(self, record: TaskRecord) -> None:
        """A claimed task goes to the pool."""
        try:
            series = self._series(record)
            series.started.inc()
            claimed_ms = record.started_at_epoch_ms or round(time.time() * 1000)
            due_ms = max(record.created_at, record.delay_until_epoch_ms or 0)
            series.latency.observe(max(0.0, (claimed_ms - due_ms) / 1000))
        except Exception:  # a figure lost is better than a task not started
            log.exception("could not count the start of task %s", record.task_id)

    def finished(self, record: TaskRecord, outcome: Outcome | None, elapsed: float) -> None:
        """A task's body is done; ``outcome`` None: abandoned (cancelled or taken over)."""
        if outcome is None:
            return
        try:
            series = self._series(record)
            series.runtime.observe(elapsed)
            if outcome.retry_in_ms is not None:
                series.retried.inc()
            elif outcome.status is Status.SUCCESS:
                series.succeeded.inc()
            elif outcome.status is Status.ERROR:
                series.failed.inc()
        except Exception:  # never in the way of the outcome being written
            log.exception("could not count the outcome of task %s", record.task_id)

    def _series(self, record: TaskRecord) -> _Series:
        # ``labels()`` costs microseconds (it validates and locks); a dict lookup does not.
        key = (record.queue_name, record.name)
        series = self._by_task.get(key)
        if series is None:
            queue, name = key
            series = _Series(
                self._started.labels(queue, name),
                self._succeeded.labels(queue, name),
                self._failed.labels(queue, name),
                self._retried.labels(queue, name),
                self._runtime.labels(queue),
                self._latency.labels(queue),
            )
            self._by_task[key] = series  # a racing thread builds the same children: harmless
        return series

    def scrape(self) -> bytes:
        """The registry in Prometheus's text format."""
        data: bytes = _prometheus().generate_latest(self.registry)
        return data


class MetricsServer(Endpoint):
    """``GET /metrics`` over HTTP on a daemon thread."""

    def __init__(self, address: str, port: int, metrics: WorkerMetrics) -> None:
        content_type = _prometheus().CONTENT_TYPE_LATEST
        routes: dict[str, Route] = {"/metrics": lambda: (200, content_type, metrics.scrape())}
        super().__init__(address, port, routes, "pgtasks-metrics")


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    """``--metrics-port`` (0 picks a free one; None: no metrics) and ``--metrics-address``."""

    port: int | None = None
    address: str = "0.0.0.0"  # scraped by Prometheus from off the host, like the health port

    def __post_init__(self) -> None:
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ConfigurationError(f"--metrics-port must be between 0 and 65535, not {self.port}")
        if self.port is not None:
            _prometheus()  # refuse at start-up, before any task is claimed

    def start(self, metrics: WorkerMetrics | None) -> MetricsServer | None:
        """Serve ``metrics`` if a port was asked for; stop the returned server at the end."""
        if self.port is None or metrics is None:
            return None
        server = MetricsServer(self.address, self.port, metrics)
        log.info("Prometheus metrics on http://%s:%d/metrics", self.address, server.port)
        server.start()
        return server
