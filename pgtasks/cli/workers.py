"""``pgtasks -A app inspect ...`` and ``pgtasks -A app status`` for native pgtasks apps: the
live workers as Celery's commands print them, read through the management API
(``list_workers``, the tasks each runs). Exit 0 when at least one worker is alive, 69 when
none is (Celery's status), so that a Kubernetes probe can run them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pgtasks.app import App
from pgtasks.cli.options import comma_list, quiet
from pgtasks.cli.replies import print_replies, print_status
from pgtasks.management import TaskManagement
from pgtasks.sysdb.records import ExecutorInfo

NATIVE_INSPECT = ("ping", "active", "registered", "active_queues", "stats")


def live_workers(manager: TaskManagement) -> list[tuple[ExecutorInfo, int]]:
    """Executors whose heartbeat is within their own lease, with the heartbeat's age in ms."""
    workers = manager.list_workers()
    now = manager.now_ms()
    return sorted(((e, max(0, now - e.last_heartbeat)) for e in workers), key=lambda x: x[0].executor_id)


def _active(manager: TaskManagement, executor_id: str) -> list[dict[str, Any]]:
    running = manager.list_tasks(status="PENDING", worker=executor_id, limit=100)
    return [
        {
            "id": r.task_id,
            "name": r.name,
            "hostname": executor_id,
            "time_start": None if r.started_at_epoch_ms is None else r.started_at_epoch_ms / 1000,
            "delivery_info": {"routing_key": r.queue_name},
            "worker_pid": None,
        }
        for r in running
    ]


def _reply(app: App, method: str, worker: ExecutorInfo, age_ms: int) -> Any:
    if method == "ping":
        return {"ok": "pong"}
    if method == "active":
        return _active(app, worker.executor_id)
    if method == "registered":  # as the worker recorded them when it started
        try:
            details = json.loads(worker.details or "{}")
        except ValueError:
            details = {}
        return sorted(details.get("registered", [])) if isinstance(details, dict) else []
    if method == "active_queues":
        return [{"name": q, "routing_key": q} for q in worker.queues]
    return {  # stats
        "hostname": worker.hostname,
        "pid": worker.pid,
        "version": worker.application_version,
        "queues": list(worker.queues),
        "started_at": worker.started_at / 1000,
        "heartbeat_age_s": age_ms / 1000,
        "lease_s": worker.lease_ms / 1000,
    }


def native_inspect(app: App, args: argparse.Namespace) -> int:
    """``inspect METHOD`` for a native app: one reply per live worker, Celery's layout."""
    if args.method not in NATIVE_INSPECT:
        print(
            f"pgtasks inspect: {args.method!r} is not available for a pgtasks App; one of "
            f"{', '.join(NATIVE_INSPECT)} (see also `pgtasks tasks list --status PENDING`)",
            file=sys.stderr,
        )
        return 2
    wanted = set(comma_list(args.destination)) or None
    workers = [(w, age) for w, age in live_workers(app) if wanted is None or w.executor_id in wanted]
    replies = {w.executor_id: _reply(app, args.method, w, age) for w, age in workers}
    return print_replies(replies, args.json, quiet(args))


def native_status(app: App, args: argparse.Namespace) -> int:
    """``status`` for a native app: the live workers, one line each."""
    wanted = set(comma_list(getattr(args, "destination", None))) or None
    workers = [(w, age) for w, age in live_workers(app) if wanted is None or w.executor_id in wanted]
    replies = {w.executor_id: {"ok": "pong", "heartbeat_age_s": age / 1000} for w, age in workers}
    return print_status(replies, getattr(args, "json", False), quiet(args))
