"""What the dashboard reads and changes, all through the management API of the App or
Client it serves (``pgtasks.management.TaskManagement``: tasks, queues, workers, schedules):
never SQL of its own nor the engine, so the dashboard, the CLI and the Python API cannot
disagree."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pgtasks.dashboard.canvas_graph import CanvasGraph, graph_around
from pgtasks.engine.failures import error_summary
from pgtasks.management import QueueInfo, StepInfo, TaskInfo, TaskManagement
from pgtasks.scheduler.admin import next_fire_of
from pgtasks.sending import Sending
from pgtasks.sysdb.records import (
    EventEntry,
    ExecutorInfo,
    MessageInfo,
    QueueLatency,
    QueueSettings,
    Status,
)
from pgtasks.sysdb.schedule_records import ScheduleRecord

ACTIVITY_WINDOW_MS = 15 * 60_000
ACTIVITY_BUCKET_MS = 60_000
LATENCY_WINDOW_MS = 5 * 60_000
LATENCY_SAMPLE = 10_000  # latest starts per queue: bounds the cost at any throughput
PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """The Tasks page's filters (all optional) and its page cursor (a ``TaskPage.next_page``)."""

    status: str | None = None
    statuses: tuple[str, ...] = ()  # several states at once (Flower's FAILURE is two)
    queue: str | None = None
    name: str | None = None
    worker: str | None = None
    created_after: dt.datetime | None = None
    created_before: dt.datetime | None = None
    after: str | None = None


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task with everything its page shows."""

    record: TaskInfo
    arguments: str
    result: str | None
    error_type: str | None
    error_message: str | None
    traceback: str | None
    steps: tuple[StepInfo, ...]
    children: list[str]
    graph: CanvasGraph
    events: list[EventEntry]  # what it set with set_event, by step (docs/waiting.md)
    messages: list[MessageInfo]  # what was sent to it, received or not


def _zone(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.timezone.utc


class Console:
    """The dashboard's one door to pgtasks. ``manager`` is the App (``-A``) or a Client."""

    def __init__(self, manager: TaskManagement) -> None:
        self.manager = manager

    # -- reading ------------------------------------------------------------------------
    def now_ms(self) -> int:
        return self.manager.now_ms()

    def queues(self) -> list[QueueInfo]:
        """Every queue with a row or with unfinished tasks, with its counts by state."""
        return self.manager.list_queues()

    def activity(self) -> dict[str, list[tuple[int, int, int]]]:
        """Per queue, one (bucket start ms, started, failed) triple per minute of the last 15."""
        now = self.now_ms()
        first = (now - ACTIVITY_WINDOW_MS) // ACTIVITY_BUCKET_MS * ACTIVITY_BUCKET_MS + ACTIVITY_BUCKET_MS
        buckets = list(range(first, now + 1, ACTIVITY_BUCKET_MS))
        found: dict[str, dict[int, list[int]]] = {}
        for a in self.manager.queue_activity(ACTIVITY_WINDOW_MS, ACTIVITY_BUCKET_MS):
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
        return {q.queue: q for q in self.manager.queue_latency(LATENCY_WINDOW_MS, LATENCY_SAMPLE)}

    def workers(self) -> list[tuple[ExecutorInfo, float, list[TaskInfo]]]:
        """Live executors (heartbeat within their lease), each with its heartbeat age in
        seconds and the tasks it runs now."""
        manager = self.manager
        live = manager.list_workers()
        now = manager.now_ms()
        return [
            (
                e,
                max(0.0, (now - e.last_heartbeat) / 1000),
                manager.list_tasks(status=Status.PENDING, worker=e.executor_id, limit=50),
            )
            for e in live
        ]

    def schedules(self) -> list[tuple[ScheduleRecord, dt.datetime | None]]:
        """Stored schedules with their next fire time in the schedule's own zone (None when
        not active)."""
        now = dt.datetime.fromtimestamp(self.now_ms() / 1000, dt.timezone.utc)
        out = []
        for s in self.manager.schedules_list():
            nxt = next_fire_of(s, now)
            out.append((s, None if nxt is None else nxt.astimezone(_zone(s.timezone))))
        return out

    def tasks(self, f: TaskFilter, limit: int = PAGE_SIZE) -> tuple[list[TaskInfo], str | None]:
        """One page of tasks, newest first, and the cursor of the next page (None at the end)."""
        page = self.manager.task_page(
            status=list(f.statuses or ((f.status,) if f.status else ())),
            name=f.name or None,
            queue=f.queue or None,
            worker=f.worker or None,
            created_after=f.created_after,
            created_before=f.created_before,
            limit=limit,
            after=f.after,
        )
        return list(page.tasks), page.next_page

    def record(self, task_id: str) -> TaskInfo | None:
        """One task without its steps, or None."""
        return self.manager.get_task(task_id, steps=False)

    def task(self, task_id: str) -> TaskView | None:
        """One task with its arguments (secret ones masked), outcome, steps and children."""
        manager = self.manager
        record = manager.get_task(task_id)
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
            steps=record.steps or (),
            children=manager.task_children(task_id),
            graph=graph_around(manager, task_id),
            events=manager.task_events(task_id),
            messages=manager.task_messages(task_id),
        )

    def arguments(self, record: TaskInfo) -> str:
        """The stored arguments, with the task's declared secret arguments masked."""
        return self.manager.shown_inputs(record)

    # -- acting -------------------------------------------------------------------------
    def cancel(self, task_id: str) -> bool:
        return self.manager.cancel_task(task_id)

    def resume(self, task_id: str) -> bool:
        return self.manager.resume_task(task_id)

    def revoke(self, task_id: str, terminate: bool, signal_name: str) -> bool:
        """Cancel a task; with ``terminate`` also ask its worker to stop the process running it.
        An id no task has yet is remembered: a task sent later under it ends REVOKED unrun."""
        return self.manager.revoke_task(task_id, terminate=terminate, signal=signal_name)

    def registered(self) -> list[str]:
        """Task names registered in this process (the App's; none for a Client)."""
        return self.manager.registered_task_names()

    def fork(self, task_id: str, start_step: int) -> str:
        return self.manager.fork_task(task_id, start_step=start_step)

    def retry(self, task_id: str) -> str:
        """Run a task in ERROR again as a new task (a new id, the same inputs, no recorded
        steps kept: a fork from step 1); the failed task stays as it was, for the record."""
        record = self.record(task_id)
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
        return self.manager.backfill_schedule(name, since, until).fired

    def set_queue_paused(self, name: str, paused: bool) -> None:
        if paused:
            self.manager.pause_queue(name)
        else:
            self.manager.resume_queue(name)

    def set_queue_limits(self, name: str, changes: dict[str, Any]) -> QueueSettings:
        """Change some of a queue's limits (the others keep their stored values)."""
        return self.manager.set_queue_settings(name, **changes)

    def set_schedule_paused(self, name: str, paused: bool) -> None:
        if paused:
            self.manager.pause_schedule(name)
        else:
            self.manager.resume_schedule(name)

    def trigger_schedule(self, name: str) -> str:
        return self.manager.trigger_schedule(name).id

    def check_arguments(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """TypeError if the task ``name``, registered here, cannot take these arguments (as
        its ``apply_async`` would raise); nothing checked for a task this process lacks."""
        self.manager.check_task_arguments(name, args, kwargs)

    def send(self, name: str, args: list[Any], kwargs: dict[str, Any], **options: Any) -> str:
        """Send task ``name`` with send ``options`` (Flower's async-apply); returns its id."""
        if not isinstance(self.manager, Sending):
            raise TypeError(f"{type(self.manager).__name__} cannot send tasks")
        return self.manager.enqueue(name, args, kwargs, **options).id
