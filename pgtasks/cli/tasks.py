"""``pgtasks tasks ...`` and ``pgtasks queue ...``: tasks and queues as an operator reads
them (times in ISO 8601 in the local zone, tracebacks rendered), all through the management
API (``TaskManagement``, as the dashboard), never the engine or SQL of its own."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
from typing import Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.flow import parse_rate_limit, parse_result_expires
from pgtasks.management import TaskInfo, TaskManagement
from pgtasks.sysdb.records import QueueSettings


def iso_time(epoch_ms: int | None) -> str:
    """An epoch-milliseconds time as ISO 8601 in the local zone (``-`` when absent)."""
    if epoch_ms is None:
        return "-"
    return (
        dt.datetime.fromtimestamp(epoch_ms / 1000, dt.timezone.utc)
        .astimezone()
        .isoformat(timespec="milliseconds")
    )


def age(seconds: float | None) -> str:
    """A duration as ``4s``, ``3m12s`` or ``2h05m`` (``-`` when absent)."""
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _error_fields(error: str | None) -> dict[str, Any]:
    if not error:
        return {}
    try:
        parsed = json.loads(error)
    except ValueError:
        return {"message": error}
    return parsed if isinstance(parsed, dict) else {"message": error}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def print_task_list(rows: list[TaskInfo]) -> None:
    """One line per task: id, state, name, queue, attempts, creation time, worker, error."""
    print(
        f"{'id':36}  {'status':10}  {'name':30}  {'queue':12}  attempts  {'created':29}  {'worker':24}  error"
    )
    for r in rows:
        print(
            f"{r.task_id:36}  {r.status.value:10}  {_clip(r.name, 30):30}  {_clip(r.queue_name, 12):12}  "
            f"{r.recovery_attempts:>8}  {iso_time(r.created_at):29}  {_clip(r.executor_id or '-', 24):24}  "
            f"{_clip(r.error_summary, 60) or '-'}"
        )


def print_task(info: TaskInfo, inputs: str) -> None:
    """A task for a person: fields with local ISO times, its steps, and its traceback as text."""
    times = (
        ("created", info.created_at),
        ("updated", info.updated_at),
        ("started", info.started_at_epoch_ms),
        ("delayed until", info.delay_until_epoch_ms),
        ("expires", info.expires_at_epoch_ms),
    )
    fields: list[tuple[str, object]] = [
        ("id", info.task_id),
        ("status", info.status.value),
        ("name", info.name),
        ("queue", info.queue_name),
        ("priority", info.priority),
        ("worker", info.executor_id or "-"),
        ("version", info.application_version or "-"),
        ("attempts", f"{info.recovery_attempts} of {info.max_recovery_attempts}"),
        ("retries", info.retries),
        *((label, iso_time(value)) for label, value in times if value is not None),
        ("parent", info.parent_task_id or "-"),
        ("forked from", info.forked_from or "-"),
        ("inputs", inputs),
        ("result", info.output if info.output is not None else "-"),
    ]
    if info.error:
        fields.append(("error", info.error_summary))
    for label, value in fields:
        print(f"{label + ':':15}{value}")
    steps = info.steps or ()
    print(f"{'steps:':15}{len(steps) if steps else 'none recorded'}")
    for s in steps:
        outcome = f"error {_error_fields(s.error).get('type', '?')}" if s.error else f"-> {s.output}"
        print(f"  {s.function_id:>3}  {s.function_name}  {iso_time(s.completed_at_epoch_ms)}  {outcome}")
    traceback = _error_fields(info.error).get("traceback")
    if traceback:
        print("traceback:")
        print(str(traceback).rstrip("\n"))


def task_json(info: TaskInfo) -> str:
    """The task as JSON for scripts (times stay epoch milliseconds, as stored)."""
    task = dataclasses.asdict(info)
    task["status"] = info.status.value
    task["steps"] = [dataclasses.asdict(s) for s in info.steps or ()]
    task["error_summary"] = info.error_summary
    return json.dumps(task, indent=2, default=str)


def run_tasks(manager: TaskManagement, args: argparse.Namespace) -> int:
    """``pgtasks tasks list|get|cancel|resume|fork``."""
    if args.action == "list":
        rows = manager.list_tasks(status=args.status, name=args.name, queue=args.queue, limit=args.limit)
        print_task_list(rows)
        return 0
    if args.action == "get":
        info = manager.get_task(args.task_id)
        if info is None:
            print(f"no task with id {args.task_id!r}", file=sys.stderr)
            return 1
        if args.json:
            print(task_json(info))
        else:
            print_task(info, manager.shown_inputs(info))  # secrets masked (known with -A only)
        return 0
    if args.action == "fork":
        print(manager.fork_task(args.task_id, start_step=args.start_step))
        return 0
    done = manager.cancel_task(args.task_id) if args.action == "cancel" else manager.resume_task(args.task_id)
    verdict = "done" if done else "nothing to do (unknown task, or a state that forbids it)"
    print(f"{args.action}: {verdict}")
    return 0 if done else 1


def _optional_int(value: str, flag: str) -> int | None:
    if value.lower() == "none":
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(f"{flag} takes a whole number or 'none', not {value!r}") from None


def _kept(queue: QueueSettings) -> str:
    """How long the queue keeps finished tasks, for the queue table."""
    if queue.result_expires_sec is None:
        return "default"
    return "never" if queue.result_expires_sec == 0 else age(queue.result_expires_sec)


def run_queue(manager: TaskManagement, args: argparse.Namespace) -> int:
    """``pgtasks queue list|set|pause|resume``; every action ends with the queue table."""
    if args.action == "set":
        changes: dict[str, object] = {}
        if args.concurrency is not None:
            changes["concurrency"] = _optional_int(args.concurrency, "--concurrency")
        if args.worker_concurrency is not None:
            changes["worker_concurrency"] = _optional_int(args.worker_concurrency, "--worker-concurrency")
        if args.rate_limit is not None:
            rate = None if args.rate_limit.lower() == "none" else args.rate_limit
            changes["rate_limit_max"], changes["rate_limit_period_sec"] = parse_rate_limit(rate)
        if args.partitioned is not None:
            changes["partition_queue"] = args.partitioned
        if args.result_expires is not None:
            changes["result_expires_sec"] = parse_result_expires(args.result_expires, "--result-expires")
        manager.set_queue_settings(args.name, **changes)
    elif args.action == "pause":
        manager.pause_queue(args.name)
    elif args.action == "resume":
        manager.resume_queue(args.name)
    print(
        f"{'queue':20} {'enqueued':>8} {'delayed':>8} {'running':>8} {'oldest':>8}  "
        f"{'concurrency':>11} {'per worker':>10} {'rate limit':>14} {'kept':>8} partitioned  paused"
    )
    for queue in manager.list_queues():
        q, counts = queue.settings, queue.counts
        rate = f"{q.rate_limit_max}/{q.rate_limit_period_sec:g}s" if q.rate_limit_max else "-"
        print(
            f"{q.name:20} {counts['ENQUEUED']:>8} {counts['DELAYED']:>8} {counts['PENDING']:>8} "
            f"{age(queue.oldest_waiting_seconds):>8}  {q.concurrency or '-':>11} "
            f"{q.worker_concurrency or '-':>10} {rate:>14} {_kept(q):>8} "
            f"{'yes' if q.partition_queue else 'no':11}  {'yes' if q.paused else 'no'}"
        )
    return 0
