"""``pgtasks -A app inspect ...`` and ``pgtasks -A app status`` for native pgtasks apps: the
live workers as Celery's commands print them, read through the management API
(``list_workers``, the tasks each runs). Exit 0 when at least one worker is alive,
1 when none is, so that a Kubernetes probe can run them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pgtasks.app import App
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


def _no_replies() -> int:
    print("Error: No nodes replied within time constraint", file=sys.stderr)
    return 1


def native_inspect(app: App, args: argparse.Namespace) -> int:
    """``inspect METHOD`` for a native app: one reply per live worker, Celery's layout."""
    if args.method not in NATIVE_INSPECT:
        print(
            f"pgtasks inspect: {args.method!r} is not available for a pgtasks App; one of "
            f"{', '.join(NATIVE_INSPECT)} (see also `pgtasks tasks list --status PENDING`)",
            file=sys.stderr,
        )
        return 2
    wanted = {d.strip() for d in args.destination.split(",")} if args.destination else None
    workers = [(w, age) for w, age in live_workers(app) if wanted is None or w.executor_id in wanted]
    replies = {w.executor_id: _reply(app, args.method, w, age) for w, age in workers}
    return print_replies(replies, args.json)


def native_status(app: App, args: argparse.Namespace) -> int:
    """``status`` for a native app: the live workers, one line each."""
    workers = live_workers(app)
    if getattr(args, "json", False):
        print(
            json.dumps({w.executor_id: {"ok": "pong", "heartbeat_age_s": age / 1000} for w, age in workers})
        )
        return 0 if workers else 1
    if not workers:
        return _no_replies()
    for worker, _ in workers:
        print(f"{worker.executor_id}: OK")
    print(f"\n{len(workers)} node{'s' if len(workers) != 1 else ''} online.")
    return 0


def print_replies(replies: dict[str, Any] | None, as_json: bool) -> int:
    """Print workers' replies in Celery's layout (or as one JSON object); exit status 0 when a
    worker replied, 1 when none did."""
    if as_json:
        print(json.dumps(replies or {}, default=str))
        return 0 if replies else 1
    if not replies:
        return _no_replies()
    for node, reply in replies.items():
        print(f"->  {node}: OK")
        if isinstance(reply, dict) and reply.get("ok") == "pong":
            print("        pong")
        elif isinstance(reply, list) and not reply:
            print("    - empty -")
        else:
            for line in json.dumps(reply, indent=4, default=str).splitlines():
                print(f"    {line}")
    count = len(replies)
    print(f"\n{count} node{'s' if count != 1 else ''} online.")
    return 0
