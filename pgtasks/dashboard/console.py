"""What the dashboard reads and changes, all through the management API (``engine.admin``,
the schedule admin, and the App's or Client's task management): never SQL of its own, so
the dashboard, the CLI and the Python API cannot disagree."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, replace
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pgtasks.dashboard.canvas_graph import CanvasGraph, graph_around
from pgtasks.engine.core import Engine
from pgtasks.engine.failures import error_summary
from pgtasks.engine.redaction import masked_inputs, secret_args_of
from pgtasks.management import TaskManagement
from pgtasks.scheduler import admin as schedule_admin
from pgtasks.sending import Sending
from pgtasks.sysdb.records import (
    ExecutorInfo,
    ListTasksParams,
    QueueLatency,
    QueueSettings,
    QueueUpsert,
    Status,
    StepRecord,
    TaskRecord,
)
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleStatus

LIVE_STATES = ("ENQUEUED", "DELAYED", "PENDING")
ACTIVITY_WINDOW_MS = 15 * 60_000
ACTIVITY_BUCKET_MS = 60_000
LATENCY_WINDOW_MS = 5 * 60_000
LATENCY_SAMPLE = 10_000  # latest starts per queue: bounds the cost at any throughput
PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One queue on the Overview and Queues pages."""

    settings: QueueSettings
    counts: dict[str, int]
    oldest_waiting_s: float | None


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """The Tasks page's filters (all optional) and its keyset cursor."""

    status: str | None = None
    statuses: tuple[str, ...] = ()  # several states at once (Flower's FAILURE is two)
    queue: str | None = None
    name: str | None = None
    worker: str | None = None
    created_after_ms: int | None = None
    created_before_ms: int | None = None
    after_key: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task with everything its page shows."""

    record: TaskRecord
    arguments: str
    result: str | None
    error_type: str | None
    error_message: str | None
    traceback: str | None
    steps: list[StepRecord]
    children: list[str]
    graph: CanvasGraph


def _zone(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.timezone.utc


class Console:
    """The dashboard's one door to pgtasks. ``manager`` is the App (``-A``) or a Client."""

    def __init__(self, manager: TaskManagement) -> None:
        self.manager = manager
        self.engine: Engine = manager.engine

    # -- reading ------------------------------------------------------------------------
    def now_ms(self) -> int:
        return self.engine.admin.now_ms()

    def queues(self) -> list[QueueRow]:
        """Every queue with a row or with unfinished tasks, with its counts by state."""
        admin = self.engine.admin
        now = admin.now_ms()
        settings = {q.name: q for q in admin.queues()}
        stats = {s.name: s for s in admin.queue_stats()}
        rows = []
        for name in sorted(set(settings) | set(stats)):
            stat = stats.get(name)
            counts = {state: 0 for state in LIVE_STATES}
            oldest = None
            if stat is not None:
                counts.update(stat.counts)
                if stat.oldest_waiting_ms is not None:
                    oldest = max(0.0, (now - stat.oldest_waiting_ms) / 1000)
            rows.append(QueueRow(settings.get(name, QueueSettings(name)), counts, oldest))
        return rows

    def activity(self) -> dict[str, list[tuple[int, int, int]]]:
        """Per queue, one (bucket start ms, started, failed) triple per minute of the last 15."""
        now = self.now_ms()
        first = (now - ACTIVITY_WINDOW_MS) // ACTIVITY_BUCKET_MS * ACTIVITY_BUCKET_MS + ACTIVITY_BUCKET_MS
        buckets = list(range(first, now + 1, ACTIVITY_BUCKET_MS))
        found: dict[str, dict[int, list[int]]] = {}
        for a in self.engine.admin.queue_activity(ACTIVITY_WINDOW_MS, ACTIVITY_BUCKET_MS):
            slot = found.setdefault(a.queue, {}).setdefault(a.bucket_ms, [0, 0])
            slot[0] += a.count
            if a.status in ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
                slot[1] += a.count
        return {
            queue: [(b, *by_bucket.get(b, [0, 0])) for b in buckets]  # type: ignore[misc]
            for queue, by_bucket in sorted(found.items())
        }

    def latency(self) -> dict[str, QueueLatency]:
        """Per queue, enqueue-to-start latency p50/p95 over the starts of the last 5 minutes."""
        return {q.queue: q for q in self.engine.admin.queue_latency(LATENCY_WINDOW_MS, LATENCY_SAMPLE)}

    def workers(self) -> list[tuple[ExecutorInfo, float, list[TaskRecord]]]:
        """Live executors (heartbeat within their lease), each with its heartbeat age in
        seconds and the tasks it runs now."""
        admin = self.engine.admin
        now = admin.now_ms()
        out = []
        for e in admin.executors():
            if now - e.last_heartbeat > e.lease_ms:
                continue
            running = admin.tasks(
                ListTasksParams(status=(Status.PENDING,), executor_id=e.executor_id, limit=50)
            )
            out.append((e, max(0.0, (now - e.last_heartbeat) / 1000), running))
        return out

    def schedules(self) -> list[tuple[ScheduleRecord, dt.datetime | None]]:
        """Stored schedules with their next fire time in the schedule's own zone (None when
        not active)."""
        now = dt.datetime.fromtimestamp(self.now_ms() / 1000, dt.timezone.utc)
        out = []
        for s in schedule_admin.listing(self.engine):
            nxt = schedule_admin.next_fire_of(s, now)
            out.append((s, None if nxt is None else nxt.astimezone(_zone(s.timezone))))
        return out

    def tasks(self, f: TaskFilter, limit: int = PAGE_SIZE) -> tuple[list[TaskRecord], tuple[int, int] | None]:
        """One page of tasks, newest first, and the key of the next page (None at the end)."""
        params = ListTasksParams(
            status=tuple(Status(s) for s in (f.statuses or ((f.status,) if f.status else ()))),
            name=f.name or None,
            queue_name=f.queue or None,
            executor_id=f.worker or None,
            created_after_epoch_ms=f.created_after_ms,
            created_before_epoch_ms=f.created_before_ms,
            limit=limit + 1,
            after_key=f.after_key,
        )
        rows = self.engine.admin.tasks(params)
        more = len(rows) > limit
        rows = rows[:limit]
        key = (rows[-1].created_at, rows[-1].enqueue_seq) if more and rows else None
        return rows, key

    def task(self, task_id: str) -> TaskView | None:
        """One task with its arguments (secret ones masked), outcome, steps and children."""
        admin = self.engine.admin
        record = admin.task(task_id)
        if record is None:
            return None
        error_type = error_message = traceback = None
        if record.error:
            try:
                data = json.loads(record.error)
                error_type, error_message = str(data.get("type")), str(data.get("message", ""))
                traceback = str(data.get("traceback") or "") or None
            except (ValueError, AttributeError):
                error_type, error_message = "Error", error_summary(record.error)
        return TaskView(
            record=record,
            arguments=self.arguments(record),
            result=record.output,
            error_type=error_type,
            error_message=error_message,
            traceback=traceback,
            steps=admin.steps(task_id),
            children=admin.children(task_id),
            graph=graph_around(self.engine, task_id),
        )

    def arguments(self, record: TaskRecord) -> str:
        """The stored arguments, with the task's declared secret arguments masked."""
        secrets = secret_args_of(self.engine.registry, record.name)
        if secrets is None:
            return record.inputs
        shown, _ = masked_inputs(self.engine.codec, secrets, record.serialization, record.inputs, record.name)
        return shown

    # -- acting -------------------------------------------------------------------------
    def cancel(self, task_id: str) -> bool:
        return self.manager.cancel_task(task_id)

    def resume(self, task_id: str) -> bool:
        return self.manager.resume_task(task_id)

    def revoke(self, task_id: str, terminate: bool, signal_name: str) -> bool:
        """Cancel a task; with ``terminate`` also ask its worker to stop the process running it."""
        if terminate:
            self.engine.admin.request_terminate(task_id, signal_name)
        return self.manager.cancel_task(task_id)

    def registered(self) -> list[str]:
        """Task names registered in this process (the App's; none for a Client)."""
        return sorted(self.engine.registry.names())

    def fork(self, task_id: str, start_step: int) -> str:
        return self.manager.fork_task(task_id, start_step=start_step)

    def retry(self, task_id: str) -> str:
        """Run a task in ERROR again as a new task (a new id, the same inputs, no recorded
        steps kept: a fork from step 1); the failed task stays as it was, for the record."""
        record = self.engine.admin.task(task_id)
        if record is None:
            raise KeyError(f"no task with id {task_id!r}")
        if record.status is not Status.ERROR:
            raise ValueError(f"only a task in ERROR can be retried; {task_id!r} is {record.status.value}")
        return self.manager.fork_task(task_id, start_step=1)

    def terminate(self, task_id: str) -> bool:
        """Revoke with terminate: cancel the task and ask its worker to kill the process
        running it (SIGTERM; prefork pools). False if the task had already finished."""
        return self.revoke(task_id, True, "SIGTERM")

    def backfill_schedule(self, name: str, since: dt.datetime, until: dt.datetime | None) -> list[str]:
        """Fire the due times of schedule ``name`` in ``[since, until]`` that have not fired;
        returns the due times fired now."""
        return schedule_admin.backfill(self.engine, name, since, until).fired

    def set_queue_paused(self, name: str, paused: bool) -> None:
        if paused:
            self.manager.pause_queue(name)
        else:
            self.manager.resume_queue(name)

    def set_queue_limits(self, name: str, changes: dict[str, Any]) -> QueueSettings:
        """Change some of a queue's limits (the others keep their stored values)."""
        admin = self.engine.admin
        current = {q.name: q for q in admin.queues((name,))}.get(name, QueueSettings(name))
        return admin.upsert_queue(QueueUpsert(replace(current, **changes), frozenset(changes)))

    def set_schedule_paused(self, name: str, paused: bool) -> None:
        status = ScheduleStatus.PAUSED if paused else ScheduleStatus.ACTIVE
        schedule_admin.set_status(self.engine, name, status)

    def trigger_schedule(self, name: str) -> str:
        return schedule_admin.trigger(self.engine, name)

    def send(self, name: str, args: list[Any], kwargs: dict[str, Any], **options: Any) -> str:
        """Send task ``name`` with send ``options`` (Flower's async-apply); returns its id."""
        if not isinstance(self.manager, Sending):
            raise TypeError(f"{type(self.manager).__name__} cannot send tasks")
        return self.manager.enqueue(name, args, kwargs, **options).id
