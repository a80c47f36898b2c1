"""pgtasks workers as Celery's ``inspect`` describes them, for Flower's ``/api/workers``: the
``stats`` (tasks run per name, pid, uptime, the pool and its processes, the broker, which
is the database with its password masked, the prefetch count, the resource usage),
``active_queues`` (kombu's queue fields), ``registered`` (with the option suffixes Celery
adds), ``conf``, and the task lists ``active``, ``reserved``, ``scheduled`` and ``revoked``.

Everything comes from the worker's row in ``executors`` and the report it publishes there
(``details``, JSON: see ``pgtasks.worker.report``); a worker that publishes less (an older
version) shows empty values of the same types."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pgtasks.dashboard.flower_tasks import inputs_of, iso, seconds
from pgtasks.management import TaskInfo
from pgtasks.sysdb.records import ExecutorInfo

RUSAGE_FIELDS = (
    "utime", "stime", "maxrss", "ixrss", "idrss", "isrss", "minflt", "majflt", "nswap",
    "inblock", "oublock", "msgsnd", "msgrcv", "nsignals", "nvcsw", "nivcsw",
)  # fmt: skip
SSL_MODES = frozenset({"require", "verify-ca", "verify-full"})


def details_of(executor: ExecutorInfo) -> dict[str, Any]:
    """The worker's published report (empty for a worker that publishes none)."""
    try:
        details = json.loads(executor.details or "{}")
    except ValueError:
        return {}
    return details if isinstance(details, dict) else {}


def queues_of(executor: ExecutorInfo, details: dict[str, Any]) -> list[str]:
    """The queues a worker consumes now (its report follows add/cancel-consumer)."""
    queues = details.get("queues")
    return [str(q) for q in queues] if isinstance(queues, list) else list(executor.queues)


def holders(live: list[ExecutorInfo]) -> dict[str, str]:
    """For each queue, the first live worker (by name) consuming it: the one that holds its
    countdown and ETA tasks in Celery's view (in pgtasks they wait in the database)."""
    out: dict[str, str] = {}
    for e in sorted(live, key=lambda x: x.executor_id):
        for q in queues_of(e, details_of(e)):
            out.setdefault(q, e.executor_id)
    return out


def prefetched_of(details: dict[str, Any]) -> list[str]:
    """The tasks a worker holds unstarted (claimed ahead of a free process)."""
    return [str(t) for t in details.get("prefetched") or ()]


def running_of(details: dict[str, Any]) -> dict[str, int | None]:
    """The tasks a worker runs now, each with the pid of the process running it."""
    running = details.get("running")
    return {str(k): v for k, v in running.items()} if isinstance(running, dict) else {}


def kombu_queue(name: str) -> dict[str, Any]:
    """A pgtasks queue in kombu's words: its own direct exchange and routing key."""
    return {
        "name": name,
        "exchange": {
            "name": name, "type": "direct", "arguments": None, "durable": True, "passive": False,
            "auto_delete": False, "delivery_mode": None, "no_declare": False,
        },
        "routing_key": name, "queue_arguments": None, "binding_arguments": None, "consumer_arguments": None,
        "durable": True, "exclusive": False, "auto_delete": False, "no_ack": False, "alias": None,
        "bindings": [], "no_declare": None, "expires": None, "message_ttl": None, "max_length": None,
        "max_length_bytes": None, "max_priority": None,
    }  # fmt: skip


def registered_of(details: dict[str, Any]) -> list[str]:
    """Registered task names as Celery lists them: its own ``celery.*`` tasks left out, the
    ones with a rate limit followed by `` [rate_limit=10/m]``."""
    options = details.get("task_options") or {}
    out = []
    for name in sorted(str(n) for n in details.get("registered") or ()):
        if name.startswith("celery."):
            continue
        rate = (options.get(name) or {}).get("rate_limit")
        out.append(f"{name} [rate_limit={rate}]" if rate else name)
    return out


def broker_of(url: str, heartbeat: float) -> dict[str, Any]:
    """The database a worker uses (its URL, password masked) as kombu's connection info."""
    parts = urlsplit(url)
    sqlite = parts.scheme.startswith("sqlite")
    query = parse_qs(parts.query)
    sslmode = (query.get("sslmode") or [""])[-1]
    timeout = (query.get("connect_timeout") or [""])[-1]
    hosts = (parts.hostname or "").split(",")
    return {
        "hostname": "" if sqlite else hosts[0],
        "userid": None,  # the database role is not shown (kombu's userid is a broker login)
        "virtual_host": parts.path.lstrip("/") if not sqlite else parts.path,
        "port": None if sqlite else _port(parts),
        "insist": False,
        "ssl": sslmode in SSL_MODES,
        "transport": "sqlite" if sqlite else "postgresql",
        "connect_timeout": int(timeout) if timeout.isdigit() else 4,
        "transport_options": {},
        "login_method": None,
        "uri_prefix": None,
        "heartbeat": heartbeat,
        "failover_strategy": "round-robin" if len(hosts) > 1 else "none",
        "credential_provider": None,
    }


def _port(parts: Any) -> int:
    try:
        return int(parts.port or 5432)
    except ValueError:  # a multi-host netloc: the first host's port
        return 5432


def pool_of(details: dict[str, Any]) -> dict[str, Any]:
    """Celery's pool stats: its size, processes, per-child limit, time limits, and how the
    tasks were shared among the processes (``writes``)."""
    processes = [int(p) for p in details.get("processes") or ()]
    counts = [int(n) for n in details.get("writes") or ()]
    total = sum(counts)
    shares = [n / total for n in counts] if total else []
    soft, hard = (details.get("time_limits") or [None, None])[:2]
    per_child = details.get("max_tasks_per_child")
    return {
        "implementation": f"pgtasks.worker:{details.get('pool', 'threads')}",
        "max-concurrency": int(details.get("concurrency") or 0),
        "processes": processes,
        "max-tasks-per-child": per_child if per_child else "N/A",
        "put-guarded-by-semaphore": False,
        "timeouts": [soft or 0, hard or 0],
        "writes": {
            "total": total,
            "avg": f"{(1 / len(counts)) if counts else 0:.2f}",
            "all": ", ".join(f"{s:.2f}" for s in shares),
            "raw": ", ".join(str(n) for n in counts),
            "strategy": "fair",
            "inqueues": {"total": len(processes), "active": len(running_of(details))},
        },
    }


def stats_of(executor: ExecutorInfo, details: dict[str, Any], now_ms: int) -> dict[str, Any]:
    rusage = details.get("rusage") or {}
    return {
        "total": {str(k): int(v) for k, v in (details.get("total") or {}).items()},
        "pid": executor.pid,
        "clock": str(details.get("clock", executor.last_heartbeat)),
        "uptime": max(0, (now_ms - executor.started_at) // 1000),
        "pool": pool_of(details),
        "broker": broker_of(str(details.get("database") or ""), executor.lease_ms / 4000),
        "prefetch_count": int(details.get("prefetch_count") or details.get("concurrency") or 0),
        "rusage": {k: rusage.get(k, 0.0 if k.endswith("time") else 0) for k in RUSAGE_FIELDS},
    }


def worker_object(
    executor: ExecutorInfo, details: dict[str, Any], now_ms: int, timestamp: float
) -> dict[str, Any]:
    """What Flower's cache holds for a worker after an inspect of all workers."""
    return {
        "active_queues": [kombu_queue(q) for q in queues_of(executor, details)],
        "timestamp": timestamp,
        "conf": details.get("conf") or {},
        "stats": stats_of(executor, details, now_ms),
        "registered": registered_of(details),
    }


def request_info(
    task: TaskInfo, shown_inputs: str, worker: str, pid: int | None, started: bool
) -> dict[str, Any]:
    """A task as Celery's ``inspect`` describes a request: args and kwargs as reprs once it
    runs (``active`` answers with safe reprs), as JSON values while it waits."""
    inputs = inputs_of(shown_inputs) or (shown_inputs, {})
    args, kwargs = inputs
    return {
        "id": task.task_id,
        "name": task.name,
        "args": repr(args) if started else args,
        "kwargs": repr(kwargs) if started else kwargs,
        "type": task.name,
        "hostname": worker,
        "time_start": seconds(task.started_at_epoch_ms) if started else None,
        "acknowledged": started,
        "delivery_info": {
            "exchange": "",
            "routing_key": task.queue_name,
            "priority": task.priority,
            "redelivered": False,
        },
        "worker_pid": pid if started else None,
    }


def scheduled_info(task: TaskInfo, shown_inputs: str, worker: str) -> dict[str, Any]:
    """A countdown or ETA task waiting for its time, as ``inspect scheduled`` shows it."""
    return {
        "eta": iso(task.delay_until_epoch_ms),
        "priority": task.priority,
        "request": request_info(task, shown_inputs, worker, None, started=False),
    }
