"""Celery's ``celery.app.control``: ``Control`` (``app.control``: revoke, purge, ping) and
``Inspect`` (``app.control.inspect()``), answered from the database.

There are no broadcast messages: a worker's row in ``executors`` (with a recent heartbeat)
answers ``ping``, and what it runs is what the ``workflow_status`` rows say. Replies have
Celery's shape: ``{node name: reply}``.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.django_results import mirror_of
from pgtasks.compat.bridge.remote_control import broadcast, matching
from pgtasks.compat.bridge.requests import delivery_info, iso_time
from pgtasks.compat.bridge.revoked_stamps import revoke_stamps
from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.task import Context
from pgtasks.compat.celery.app.utils import filter_hidden_settings
from pgtasks.sysdb.records import ExecutorInfo, ListTasksParams, Status, TaskRecord

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

LIST_LIMIT = 1000
Replies = list[dict[str, Any]] | None  # [{node: reply}] of a remote control command


class Control:
    """Celery's ``app.control`` on pgtasks."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def revoke(
        self,
        task_id: str | list[str],
        destination: Any = None,
        terminate: bool = False,
        signal: Any = None,
        **kwargs: Any,
    ) -> None:
        """Revoke tasks durably: one that has not started never will, on any worker (even one
        started later). A running task stops at its next ``@app.step``; with ``terminate=True``
        a prefork worker also kills the process running it, at its next heartbeat.

        ``task_revoked`` is sent here, in the revoking process, for each task this call
        revoked: no worker ever receives a revoked task to send it from."""
        ids = [task_id] if isinstance(task_id, str) else list(task_id)
        admin = self.app.engine.admin
        for one in ids:
            revoked = admin.cancel(one)
            # An id no task has yet is remembered, as Celery's workers remember revoked ids
            # (a task that arrived in between is cancelled instead).
            while not revoked and admin.task(one) is None:
                if admin.revoke_ahead(one, self.app.conf.task_default_queue):
                    break
                revoked = admin.cancel(one)
            if terminate:
                admin.request_terminate(one, str(signal or "SIGTERM"))
            record = admin.task(one) if revoked else None
            if record is not None:
                self._revoked(record, terminate, signal)

    def _revoked(self, record: TaskRecord, terminated: bool, signum: Any) -> None:
        sender = self.app.tasks.get(record.name)
        request = Context(id=record.task_id, task=record.name)
        signals.task_revoked.send(
            sender=sender, request=request, terminated=terminated, signum=signum, expired=False
        )
        mirror = mirror_of(self.app)
        if mirror is not None and (sender is None or not sender.ignore_result):
            mirror.revoked(record.task_id)

    def revoke_by_stamped_headers(
        self,
        headers: dict[str, Any],
        destination: Any = None,
        terminate: bool = False,
        signal: Any = None,
        reply: bool = False,
        **kwargs: Any,
    ) -> list[dict[str, Any]] | None:
        """Revoke every task stamped with one of ``headers``' values (a header and a value or a
        list of them), durably: a worker cancels a matching task when it would start it, even
        one sent later (bridge/revoked_stamps.py). ``terminate`` does not stop a task already
        running (the reply says so, as Celery's does when nothing was terminated)."""
        revoke_stamps(self.app, headers)
        if not reply:
            return None
        text = f"headers {headers} flagged as revoked, but not terminated"
        return [{node: {"ok": text}} for node in self.inspect(destination=destination).nodes()]

    def terminate(
        self, task_id: str | list[str], destination: Any = None, signal: str = "SIGTERM", **kwargs: Any
    ) -> None:
        self.revoke(task_id, destination=destination, terminate=True, signal=signal)

    def purge(self, connection: Any = None, queues: Any = None) -> int:
        """Discard every task waiting in the queues (ENQUEUED or DELAYED), or only in
        ``queues``; return how many. They end REVOKED (cancelled), so they are never run."""
        names: list[str | None] = [None] if not queues else sorted(set(queues))
        return sum(self._purge_queue(name) for name in names)

    def _purge_queue(self, queue: str | None) -> int:
        count = 0
        admin = self.app.engine.admin
        waiting_states = (Status.ENQUEUED, Status.DELAYED)
        while True:
            listing = ListTasksParams(status=waiting_states, queue_name=queue, limit=LIST_LIMIT)
            waiting = admin.tasks(listing)
            cancelled = sum(1 for record in waiting if admin.cancel(record.task_id))
            count += cancelled
            if len(waiting) < LIST_LIMIT or cancelled == 0:
                return count

    discard_all = purge

    def ping(self, destination: Any = None, timeout: float = 1.0, **kwargs: Any) -> list[dict[str, Any]]:
        """``[{node: {'ok': 'pong'}}]`` for every live worker."""
        return [{node: {"ok": "pong"}} for node in self.inspect(destination=destination).nodes()]

    def inspect(self, destination: Any = None, timeout: float = 1.0, **kwargs: Any) -> Inspect:
        return Inspect(self.app, destination)

    def broadcast(
        self,
        command: str,
        arguments: dict[str, Any] | None = None,
        destination: Any = None,
        connection: Any = None,
        reply: bool = False,
        timeout: float = 1.0,
        limit: int | None = None,
        callback: Any = None,
        channel: Any = None,
        pattern: str | None = None,
        matcher: str | None = None,
        **extra_kwargs: Any,
    ) -> Replies:
        """Send a remote control command to the live workers (those of ``destination``, or
        whose name ``pattern`` matches; all by default); with ``reply=True`` the replies that
        arrive within ``timeout`` seconds (at most ``limit``), ``[{node: reply}]``. A worker
        answers a command it does not know with an error (bridge/remote_control.py)."""
        nodes = matching(self.inspect(destination=destination).nodes(), pattern, matcher)
        arguments = {**(arguments or {}), **extra_kwargs}
        return broadcast(self.app, nodes, command, arguments, reply, timeout, limit, callback)

    def shutdown(self, destination: Any = None, **kwargs: Any) -> Replies:
        """Warm shutdown of the workers: running tasks finish, held ones go back."""
        return self.broadcast("shutdown", destination=destination, **kwargs)

    def pool_grow(self, n: int = 1, destination: Any = None, **kwargs: Any) -> Replies:
        return self.broadcast("pool_grow", {"n": n}, destination, **kwargs)

    def pool_shrink(self, n: int = 1, destination: Any = None, **kwargs: Any) -> Replies:
        return self.broadcast("pool_shrink", {"n": n}, destination, **kwargs)

    def pool_restart(
        self,
        modules: Any = None,
        reload: bool = False,
        reloader: Any = None,
        destination: Any = None,
        **kwargs: Any,
    ) -> Replies:
        """Answered as Celery's workers answer without ``worker_pool_restarts``: an error."""
        arguments = {"modules": modules, "reload": reload, "reloader": reloader}
        return self.broadcast("pool_restart", arguments, destination, **kwargs)

    def autoscale(self, max: int, min: int, destination: Any = None, **kwargs: Any) -> Replies:
        """Answered as Celery's workers answer without ``--autoscale``: an error."""
        return self.broadcast("autoscale", {"max": max, "min": min}, destination, **kwargs)

    def add_consumer(
        self,
        queue: str,
        exchange: Any = None,
        exchange_type: str = "direct",
        routing_key: Any = None,
        options: Any = None,
        destination: Any = None,
        **kwargs: Any,
    ) -> Replies:
        """Make the workers consume ``queue`` too (exchanges and routing keys have no
        meaning here: a queue is a name)."""
        return self.broadcast("add_consumer", {"queue": queue}, destination, **kwargs)

    def cancel_consumer(self, queue: str, destination: Any = None, **kwargs: Any) -> Replies:
        return self.broadcast("cancel_consumer", {"queue": queue}, destination, **kwargs)

    def rate_limit(self, task_name: str, rate_limit: Any, destination: Any = None, **kwargs: Any) -> Replies:
        """Workers answer with an error naming where pgtasks sets rate limits (per queue)."""
        arguments = {"task_name": task_name, "rate_limit": rate_limit}
        return self.broadcast("rate_limit", arguments, destination, **kwargs)

    def time_limit(
        self, task_name: str, soft: Any = None, hard: Any = None, destination: Any = None, **kwargs: Any
    ) -> Replies:
        """Workers answer with an error naming where pgtasks sets time limits (the task)."""
        arguments = {"task_name": task_name, "soft": soft, "hard": hard}
        return self.broadcast("time_limit", arguments, destination, **kwargs)

    def enable_events(self, destination: Any = None, **kwargs: Any) -> Replies:
        """Task events are the database's rows: always on (the reply says so)."""
        return self.broadcast("enable_events", destination=destination, **kwargs)

    def disable_events(self, destination: Any = None, **kwargs: Any) -> Replies:
        """Workers answer with an error: the database records every state."""
        return self.broadcast("disable_events", destination=destination, **kwargs)

    def heartbeat(self, destination: Any = None, **kwargs: Any) -> Replies:
        """Each worker writes its report (what ``inspect stats`` and Flower read) at once."""
        return self.broadcast("heartbeat", destination=destination, **kwargs)

    def election(self, id: Any, topic: Any, action: Any = None, connection: Any = None) -> None:
        raise NotImplementedError(
            "election is Celery's worker-to-worker gossip; pgtasks workers coordinate through "
            "the database and hold no elections"
        )


def _details(executor: ExecutorInfo) -> dict[str, Any]:
    """What the worker recorded about itself when it started (nothing from older workers)."""
    try:
        details = json.loads(executor.details or "{}")
    except ValueError:
        return {}
    return details if isinstance(details, dict) else {}


def _lease_alive(executor: ExecutorInfo, now_ms: int) -> bool:
    return now_ms - executor.last_heartbeat <= executor.lease_ms


class Inspect:
    """``app.control.inspect()``: ping, active, scheduled, reserved, registered, stats,
    revoked, active_queues, query_task. ``destination`` limits the nodes."""

    def __init__(self, app: Celery, destination: Any = None) -> None:
        self.app = app
        self.destination = [destination] if isinstance(destination, str) else destination

    def _executors(self) -> list[ExecutorInfo]:
        admin = self.app.engine.admin
        now = admin.now_ms()
        live = [e for e in admin.executors() if _lease_alive(e, now)]
        if self.destination:
            live = [e for e in live if e.executor_id in self.destination]
        return sorted(live, key=lambda e: e.executor_id)

    def nodes(self) -> list[str]:
        return [e.executor_id for e in self._executors()]

    def _reply(self, answer: dict[str, Any]) -> dict[str, Any] | None:
        return answer or None  # Celery returns None when no worker replied

    def _task_info(self, record: TaskRecord) -> dict[str, Any]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        with contextlib.suppress(Exception):  # unreadable inputs: shown empty
            args, kwargs = self.app.engine.codec.loads_inputs(
                record.serialization, record.inputs, record.name
            )
        return {
            "id": record.task_id,
            "name": record.name,
            "args": list(args),
            "kwargs": kwargs,
            "type": record.name,
            "hostname": record.executor_id,
            "time_start": (record.started_at_epoch_ms or 0) / 1000 or None,
            "acknowledged": True,
            "worker_pid": None,
            "delivery_info": delivery_info(record),
        }

    def ping(self) -> dict[str, Any] | None:
        return self._reply({node: {"ok": "pong"} for node in self.nodes()})

    def active(self, safe: Any = None) -> dict[str, Any] | None:
        """The tasks each worker is running (PENDING rows it holds)."""
        running = self.app.engine.admin.tasks(ListTasksParams(status=(Status.PENDING,), limit=LIST_LIMIT))
        nodes = self.nodes()
        return self._reply(
            {node: [self._task_info(r) for r in running if r.executor_id == node] for node in nodes}
        )

    def scheduled(self, safe: Any = None) -> dict[str, Any] | None:
        """Celery lists ETA tasks a worker holds in memory; pgtasks workers hold none (DELAYED
        tasks wait in the database), so every node answers an empty list."""
        return self._reply({node: [] for node in self.nodes()})

    def reserved(self, safe: Any = None) -> dict[str, Any] | None:
        """Workers claim only free slots, so nothing is reserved beyond what is active."""
        return self._reply({node: [] for node in self.nodes()})

    def registered(self, *taskinfoitems: Any, builtins: bool = False) -> dict[str, Any] | None:
        """The task names each worker registered, as the worker recorded them when it started
        (Celery's own ``celery.*`` tasks only with ``builtins=True``)."""
        return self._reply(
            {
                e.executor_id: [
                    n for n in _details(e).get("registered", []) if builtins or not n.startswith("celery.")
                ]
                for e in self._executors()
            }
        )

    registered_tasks = registered

    def stats(self) -> dict[str, Any] | None:
        admin = self.app.engine.admin
        now = admin.now_ms()
        return self._reply(
            {
                e.executor_id: {
                    "pid": e.pid,
                    "hostname": e.hostname,
                    "clock": str(now),
                    "uptime": max(0, (now - e.started_at) // 1000),
                    "pool": {
                        "implementation": _details(e).get("pool", "pgtasks"),
                        "max-concurrency": _details(e).get("concurrency"),
                    },
                    "broker": {"transport": admin.dialect()},
                    "application_version": e.application_version,
                    "queues": list(e.queues),
                    "last_heartbeat": iso_time(e.last_heartbeat),
                }
                for e in self._executors()
            }
        )

    def revoked(self) -> dict[str, Any] | None:
        """Ids of revoked (cancelled) tasks, newest first, the same for every node (revokes are
        stored in the database, not in each worker)."""
        rows = self.app.engine.admin.tasks(ListTasksParams(status=(Status.CANCELLED,), limit=LIST_LIMIT))
        ids = [r.task_id for r in rows]
        return self._reply({node: ids for node in self.nodes()})

    def active_queues(self) -> dict[str, Any] | None:
        """The queues each worker consumes now (its report: ``add_consumer`` and
        ``cancel_consumer`` change them), else those it started with."""
        return self._reply(
            {
                e.executor_id: [
                    {"name": q, "exchange": {"name": q}, "routing_key": q, "durable": True}
                    for q in _details(e).get("queues") or e.queues
                ]
                for e in self._executors()
            }
        )

    def query_task(self, *ids: Any) -> dict[str, Any] | None:
        """``{node: {id: [state, info]}}`` for the given ids held by each node."""
        wanted = [i for group in ids for i in ([group] if isinstance(group, str) else group)]
        records = [r for r in (self.app.engine.get_task(i) for i in wanted) if r is not None]
        answer: dict[str, Any] = {}
        for node in self.nodes():
            held = {
                r.task_id: ["active", self._task_info(r)]
                for r in records
                if r.executor_id == node and r.status is Status.PENDING
            }
            answer[node] = held
        return self._reply(answer)

    def report(self) -> dict[str, Any] | None:
        return self._reply({node: {"ok": f"pgtasks pid {os.getpid()}"} for node in self.nodes()})

    def conf(self, with_defaults: bool = False) -> dict[str, Any] | None:
        shown = filter_hidden_settings(self.app.conf.table(with_defaults))  # no secret leaves
        return self._reply({node: shown for node in self.nodes()})

    def clock(self) -> dict[str, Any] | None:
        now = self.app.engine.admin.now_ms()
        return self._reply({node: {"clock": now} for node in self.nodes()})
