"""pgtasks workers as Celery's ``inspect`` describes them, for Flower's ``/api/workers`` and
a Celery app's ``app.control.inspect()``: the ``stats`` (tasks run per name, pid, uptime, the
pool and its processes, the broker, which is the database with its password masked, the
prefetch count, the resource usage), ``active_queues`` (kombu's queue fields),
``registered`` (with the option suffixes Celery adds), ``conf``, and the task lists
``active``, ``reserved``, ``scheduled`` and ``revoked``.

Everything comes from the worker's row in ``executors`` and the report it publishes there
(``details``, JSON: see ``pgtasks.worker.control``) and from the task rows; a worker that
publishes less (an older version) shows empty values of the same types."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from pgtasks.management import TaskInfo
from pgtasks.sysdb.records import ExecutorInfo, Status
from pgtasks.worker.pools import FORKING_POOLS

RUSAGE_FIELDS = (
    "utime", "stime", "maxrss", "ixrss", "idrss", "isrss", "minflt", "majflt", "nswap",
    "inblock", "oublock", "msgsnd", "msgrcv", "nsignals", "nvcsw", "nivcsw",
)  # fmt: skip
SSL_MODES = frozenset({"require", "verify-ca", "verify-full"})
# Celery's worker lists each ETA task with the priority of its timer entry, always 6 (not the
# task's priority, which its delivery_info carries).
ETA_ENTRY_PRIORITY = 6
REVOKED_SHOWN = 1000  # the newest revoked task ids a worker lists
TASKS_SHOWN = 1000  # the most running, held or waiting tasks a worker lists

# (args, kwargs) of a task as shown (its declared secrets masked).
Inputs = Callable[[TaskInfo], tuple[Any, Any]]


class TaskLister(Protocol):
    """What the task lists are read from (an App, a Client, the dashboard's manager)."""

    def list_tasks(
        self, status: Any = None, *, limit: int = 100, worker: str | None = None
    ) -> list[TaskInfo]: ...


def seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as Celery's ISO 8601 with its offset (``...T23:44:32.691000+00:00``)."""
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat()


def parsed_json(text: str | None) -> tuple[bool, Any]:
    """(True, value) when ``text`` is JSON, else (False, None)."""
    if text is None:
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def inputs_of(shown: str) -> tuple[Any, Any] | None:
    """The (args, kwargs) of stored JSON inputs (secrets already masked), None if not JSON."""
    ok, data = parsed_json(shown)
    if not ok or not isinstance(data, dict):
        return None
    return data.get("args", []), data.get("kwargs", {})


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


def registered_of(
    details: dict[str, Any],
    items: Iterable[str] = ("rate_limit",),
    attribute: Callable[[str, str], Any] | None = None,
    builtins: bool = False,
) -> list[str]:
    """Registered task names as Celery lists them, sorted: its own ``celery.*`` tasks left out
    unless ``builtins``, each followed by the ``items`` it has a value for (`` [rate_limit=10/m]``).
    A value comes from the worker's report (``rate_limit``), else from ``attribute(name, item)``.
    pgtasks' own tasks (``pgtasks.*``, the Celery layer's helpers) are never listed."""
    options = details.get("task_options") or {}
    wanted = list(items)
    out = []
    for name in sorted(str(n) for n in details.get("registered") or ()):
        if name.startswith("pgtasks.") or (name.startswith("celery.") and not builtins):
            continue
        reported = options.get(name) or {}
        values = []
        for item in wanted:
            value = reported.get(item)
            if value is None and attribute is not None:
                value = attribute(name, item)
            if value is not None:
                values.append(f"{item}={value}")
        out.append(f"{name} [{' '.join(values)}]" if values else name)
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
    task: TaskInfo, inputs: tuple[Any, Any], worker: str, pid: int | None, started: bool, reprs: bool
) -> dict[str, Any]:
    """A task as Celery's ``inspect`` describes a request, its args and kwargs as reprs when
    ``reprs`` (``active(safe=True)``; Flower's view of a running task: the sender's
    ``argsrepr``/``kwargsrepr`` where it gave them), else as values."""
    args, kwargs = inputs
    args_shown, kwargs_shown = task.shown_arguments  # the sender's argsrepr/kwargsrepr
    return {
        "id": task.task_id,
        "name": task.name,
        "args": (repr(args) if args_shown is None else args_shown) if reprs else args,
        "kwargs": (repr(kwargs) if kwargs_shown is None else kwargs_shown) if reprs else kwargs,
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


def scheduled_info(task: TaskInfo, inputs: tuple[Any, Any], worker: str, reprs: bool) -> dict[str, Any]:
    """A countdown or ETA task waiting for its time, as ``inspect scheduled`` shows it."""
    return {
        "eta": iso(task.delay_until_epoch_ms),
        "priority": ETA_ENTRY_PRIORITY,
        "request": request_info(task, inputs, worker, None, started=False, reprs=reprs),
    }


@dataclass(frozen=True, slots=True)
class Waiting:
    """What every worker's task lists share, read once for all of them: the countdown and
    ETA tasks, the worker that lists each queue's (:func:`holders`), the revoked ids."""

    delayed: list[TaskInfo]
    holder: dict[str, str]
    revoked: list[str]


def waiting_of(tasks: TaskLister, live: list[ExecutorInfo]) -> Waiting:
    """The :class:`Waiting` tasks, for the ``live`` workers."""
    delayed = tasks.list_tasks(Status.DELAYED, limit=TASKS_SHOWN)
    revoked = [t.task_id for t in tasks.list_tasks(Status.CANCELLED, limit=REVOKED_SHOWN)]
    return Waiting(delayed, holders(live), revoked)


def task_lists(
    tasks: TaskLister,
    executor: ExecutorInfo,
    details: dict[str, Any],
    waiting: Waiting,
    inputs: Inputs,
    running_reprs: bool = False,
    reprs: bool = False,
) -> dict[str, Any]:
    """``active``, ``reserved``, ``scheduled`` and ``revoked`` of one worker: the tasks it
    runs (each with the pid running it), those it holds unstarted (claimed ahead of a free
    process: Celery's reserved), and the countdown and ETA tasks of its queues. Those wait in
    the database, not in a worker: each is listed by the first live worker (by name)
    consuming its queue, as the one that would hold it in Celery. ``running_reprs`` shows
    the running tasks' arguments as reprs, ``reprs`` every task's."""
    worker = executor.executor_id
    running = running_of(details)
    # A task started since the last report runs in the worker's own process, unless its
    # pool forks (then the next report names the child).
    own_pid = None if details.get("pool") in FORKING_POOLS else executor.pid
    prefetched = set(prefetched_of(details))
    mine = tasks.list_tasks(Status.PENDING, worker=worker, limit=TASKS_SHOWN)
    active = [
        request_info(t, inputs(t), worker, running.get(t.task_id) or own_pid, True, reprs or running_reprs)
        for t in mine
        if t.task_id not in prefetched
    ]
    reserved = [
        request_info(t, inputs(t), worker, None, False, reprs) for t in mine if t.task_id in prefetched
    ]
    scheduled = [
        scheduled_info(t, inputs(t), worker, reprs)
        for t in waiting.delayed
        if waiting.holder.get(t.queue_name) == worker
    ]
    return {"active": active, "scheduled": scheduled, "reserved": reserved, "revoked": waiting.revoked}
