"""``GET /metrics`` in Prometheus's text format (prometheus-client, the ``dashboard`` extra):
pgtasks' own figures (unfinished tasks by queue and state, the age of the oldest waiting task,
workers online, queues paused, how late each active schedule is), Flower's ``flower_*``
families with Flower's names and labels (so boards and alerts written for Flower work), and
the standard process and Python collectors. Every value is read when scraped, from the same
management API as the pages (no counters kept in this process): Flower's event counts are
those of the tasks recorded among the newest ``METRICS_WINDOW``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pgtasks.dashboard.console import Console
from pgtasks.dashboard.flower import task_view
from pgtasks.scheduler.admin import next_fire_of
from pgtasks.scheduler.definitions import parse_due


class PgtasksCollector(Collector):
    """Reads the current figures through ``console`` at every scrape."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def collect(self) -> Iterator[Metric]:
        tasks = GaugeMetricFamily(
            "pgtasks_tasks", "Unfinished tasks by queue and state", labels=["queue", "state"]
        )
        oldest = GaugeMetricFamily(
            "pgtasks_oldest_waiting_seconds", "Age of the oldest ENQUEUED task of the queue", labels=["queue"]
        )
        paused = GaugeMetricFamily("pgtasks_queue_paused", "1 when the queue is paused", labels=["queue"])
        for row in self.console.queues():
            name = row.settings.name
            for state, n in row.counts.items():
                tasks.add_metric([name, state], n)
            oldest.add_metric([name], row.oldest_waiting_seconds or 0.0)
            paused.add_metric([name], 1.0 if row.settings.paused else 0.0)
        workers = GaugeMetricFamily("pgtasks_workers_online", "Workers whose heartbeat is within their lease")
        workers.add_metric([], len(self.console.workers()))
        lag = GaugeMetricFamily(
            "pgtasks_schedule_lag_seconds",
            "How long an active schedule's earliest unfired due time has been waiting (0 when none is due)",
            labels=["schedule"],
        )
        now = dt.datetime.fromtimestamp(self.console.now_ms() / 1000, dt.timezone.utc)
        for record, _ in self.console.schedules():
            cursor = record.cursor
            if cursor is None:
                continue
            due = next_fire_of(record, parse_due(cursor))
            if due is not None:
                lag.add_metric([record.name], max(0.0, (now - due).total_seconds()))
        yield from (tasks, oldest, paused, workers, lag)


METRICS_WINDOW = 10_000  # the newest tasks Flower's families are computed from
# prometheus_client's default buckets, as Flower's task runtime histogram uses them
RUNTIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
EVENT_OF_STATE = {"SUCCESS": "task-succeeded", "FAILURE": "task-failed", "REVOKED": "task-revoked"}


class FlowerCollector(Collector):
    """Flower's families, computed from the newest tasks and the workers' rows: the task
    events they imply (received, started, retried, and their end), the runtime histogram,
    prefetch time and prefetched tasks, workers online and the tasks they execute."""

    def __init__(self, console: Console, buckets: tuple[float, ...] = RUNTIME_BUCKETS) -> None:
        self.console = console
        self.buckets = buckets
        self.seen_workers: set[str] = set()  # Flower keeps stopped workers at 0

    def collect(self) -> Iterator[Metric]:
        manager = self.console.manager
        labels = ["task", "type", "worker"]
        events = CounterMetricFamily("flower_events", "Number of events", labels=labels)
        runtime = HistogramMetricFamily(
            "flower_task_runtime_seconds", "Task runtime", labels=["task", "worker"]
        )
        prefetch_time = GaugeMetricFamily(
            "flower_task_prefetch_time_seconds",
            "The time the task spent waiting at the celery worker to be executed.",
            labels=["task", "worker"],
        )
        prefetched = GaugeMetricFamily(
            "flower_worker_prefetched_tasks", "Number of tasks of given type prefetched at a worker",
            labels=["task", "worker"],
        )  # fmt: skip
        online = GaugeMetricFamily("flower_worker_online", "Worker online status", labels=["worker"])
        executing = GaugeMetricFamily(
            "flower_worker_number_of_currently_executing_tasks",
            "Number of tasks currently executing at a worker",
            labels=["worker"],
        )
        workers = manager.all_workers()
        view = task_view(manager)
        counts: dict[tuple[str, str, str], tuple[int, float]] = {}
        runtimes: dict[tuple[str, str], list[float]] = {}
        queued: dict[tuple[str, str], int] = {}
        running: dict[str, int] = {}

        def count(task: str, kind: str, worker: str, n: int, at: float) -> None:
            n0, first = counts.get((task, kind, worker), (0, at))
            counts[(task, kind, worker)] = (n0 + n, min(first, at))

        for task in manager.recent_tasks(window=METRICS_WINDOW):
            body = view.task(task)
            worker = body["worker"]
            if not worker:
                continue
            name, state, at = task.name, body["state"], body["timestamp"] or 0.0
            if body["name"] is None:  # refused unknown: Flower sees its task-failed only
                count("", "task-failed", worker, 1, at)
                continue
            count(name, "task-received", worker, 1, at)
            if task.retries:
                count(name, "task-retried", worker, task.retries, at)
            if body["started"] is not None or state in ("SUCCESS", "FAILURE"):
                count(name, "task-started", worker, 1, at)
            if state in EVENT_OF_STATE:
                count(name, EVENT_OF_STATE[state], worker, 1, at)
            if body["runtime"] is not None:
                runtimes.setdefault((name, worker), []).append(body["runtime"])
            # As Flower: "prefetch metrics only make sense for tasks without a scheduled time"
            prefetched_now = state == "RECEIVED" and body["eta"] is None
            queued[(name, worker)] = queued.get((name, worker), 0) + prefetched_now
            running[worker] = running.get(worker, 0) + (state == "STARTED")
        for (name, kind, worker), (n, first) in sorted(counts.items()):
            events.add_metric([name, kind, worker], n, created=first)
        for (name, worker), values in sorted(runtimes.items()):
            cumulative = [(_bound(b), float(sum(v <= b for v in values))) for b in self.buckets]
            runtime.add_metric([name, worker], [*cumulative, ("+Inf", float(len(values)))], sum(values))
            runtime.samples.append(
                Sample("flower_task_runtime_seconds_created", {"task": name, "worker": worker}, 0.0)
            )
        for (name, worker), n in sorted(queued.items()):
            prefetched.add_metric([name, worker], n)
            prefetch_time.add_metric([name, worker], 0.0)
        self.seen_workers.update(e.executor_id for e, _ in workers)
        alive = {e.executor_id: live for e, live in workers}
        for worker in sorted(self.seen_workers):
            online.add_metric([worker], 1.0 if alive.get(worker) else 0.0)
            executing.add_metric([worker], running.get(worker, 0))
        yield from (events, runtime, prefetch_time, prefetched, online, executing)


def _bound(value: float) -> str:
    return repr(float(value))


class MetricsEndpoint:
    """The ``/metrics`` route: its own registry with pgtasks', Flower's and the standard
    process and Python collectors (not prometheus_client's global one, which other code in
    the process may fill)."""

    def __init__(self, console: Console, buckets: tuple[float, ...] = RUNTIME_BUCKETS) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        GCCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        ProcessCollector(registry=self.registry)
        self.registry.register(FlowerCollector(console, buckets))
        self.registry.register(PgtasksCollector(console))

    async def endpoint(self, request: Request) -> Response:
        body = await run_in_threadpool(generate_latest, self.registry)
        return Response(body, headers={"content-type": "text/plain"})
