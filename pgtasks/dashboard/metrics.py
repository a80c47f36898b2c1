"""``GET /metrics`` in Prometheus's text format (prometheus-client, the ``dashboard`` extra):
unfinished tasks by queue and state, the age of the oldest waiting task, workers online,
queues paused, and how late each active schedule is. Every value is read when scraped, from
the same management API as the pages (no counters kept in this process)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pgtasks.dashboard.console import Console
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


class MetricsEndpoint:
    """The ``/metrics`` route."""

    def __init__(self, console: Console) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(PgtasksCollector(console))

    async def endpoint(self, request: Request) -> Response:
        body = await run_in_threadpool(generate_latest, self.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
