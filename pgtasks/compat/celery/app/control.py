"""Celery's ``celery.app.control``: ``Control`` (``app.control``: revoke, purge, the remote
control commands) and ``Inspect`` (``app.control.inspect()``, in ``inspect.py``), through the
database.

There are no broadcast messages: a command is a row the workers read and answer, a worker's
row in ``executors`` (with a recent heartbeat) answers ``ping``, and what it runs is what the
``workflow_status`` rows say. Replies have Celery's shape: ``{node name: reply}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.django_results import mirror_of
from pgtasks.compat.bridge.remote_control import (
    answered,
    broadcast,
    listed,
    matching,
    revoke_replies,
    running_on,
)
from pgtasks.compat.bridge.revoked_stamps import revoke_stamps
from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.amqp import queue_names
from pgtasks.compat.celery.app.inspect import Inspect
from pgtasks.compat.celery.app.task import Context
from pgtasks.engine.settings import validate_queue_name
from pgtasks.sysdb.records import ListTasksParams, Status, TaskRecord

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

LIST_LIMIT = 1000
Replies = list[dict[str, Any]] | None  # [{node: reply}] of a remote control command

# Celery's inspect commands, and the dump_* names its workers also answer to, as broadcast()
# sends them: answered from the database, as app.control.inspect() answers them.
INSPECT_COMMANDS = {
    "ping": "ping",
    "clock": "clock",
    "hello": "hello",
    "stats": "stats",
    "report": "report",
    "active": "active",
    "dump_active": "active",
    "reserved": "reserved",
    "dump_reserved": "reserved",
    "scheduled": "scheduled",
    "dump_schedule": "scheduled",
    "revoked": "revoked",
    "dump_revoked": "revoked",
    "registered": "registered",
    "dump_tasks": "registered",
    "conf": "conf",
    "dump_conf": "conf",
    "active_queues": "active_queues",
    "query_task": "query_task",
}


def _task_ids(task_id: Any) -> list[str]:
    """The ids ``revoke`` was given: one id, or any iterable of them but a string or a mapping
    (Celery's ``maybe_list``); an id that is not a string is refused by the lookup, naming it.
    A ``uuid.UUID`` is its text: projects keep task ids in UUID columns and revoke them as
    read (celery-director), which Celery's JSON broadcast sent as text."""
    if isinstance(task_id, Iterable) and not isinstance(task_id, (str, bytes, Mapping)):
        ids = list(task_id)
    elif task_id is None:
        raise TypeError("revoke takes a task id or a list of task ids, not None")
    else:
        ids = [task_id]
    return [str(one) if isinstance(one, uuid.UUID) else one for one in ids]


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
        reply: bool = False,
        limit: int | None = None,
        callback: Any = None,
        **kwargs: Any,
    ) -> Replies:
        """Revoke tasks durably: one that has not started never will, on any worker (even one
        started later). A running task stops at its next ``@app.step``; with ``terminate=True``
        a prefork worker also kills the process running it, at its next heartbeat. With
        ``reply=True``, each live worker of ``destination``'s reply, in Celery's words.

        ``task_revoked`` is sent here, in the revoking process, for each task this call
        revoked: no worker ever receives a revoked task to send it from."""
        ids = _task_ids(task_id)
        admin = self.app.engine.admin
        running = running_on(admin, ids) if terminate else {}
        for one in ids:
            # An id no task has yet is remembered, as Celery's workers remember revoked ids.
            revoked = self.app.revoke_task(one, terminate, str(signal or "SIGTERM"))
            record = admin.task(one) if revoked else None
            if record is not None:
                self._revoked(record, terminate, signal)
        if not reply:
            return None
        nodes = self.inspect(destination=destination).nodes()
        return answered(revoke_replies(nodes, ids, running if terminate else None), limit, callback)

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
    ) -> Replies:
        return self.revoke(task_id, destination=destination, terminate=True, signal=signal, **kwargs)

    def purge(self, connection: Any = None, queues: Any = None) -> int:
        """Discard every task waiting in the queues (ENQUEUED or DELAYED), or only in
        ``queues`` (names, ``'a,b'`` or Queue objects; a name no queue can have is refused);
        return how many. They end REVOKED (cancelled), so they are never run."""
        names: list[str | None] = [None]
        if queues:
            names = [*sorted({validate_queue_name(n) for n in queue_names(queues)})]
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
        return Inspect(self.app, destination, timeout, **kwargs)

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
        answers a command it does not know with an error (bridge/remote_control.py). Celery's
        inspect commands (``ping``, ``stats``, ``active``, ...) are answered from the database
        as :meth:`inspect` answers them, and ``revoke``, ``terminate`` and
        ``revoke_by_stamped_headers`` act as the methods of those names."""
        nodes = matching(self.inspect(destination=destination).nodes(), pattern, matcher)
        arguments = {**(arguments or {}), **extra_kwargs}
        if command in ("revoke", "terminate"):
            ids = arguments.pop("task_id", None)
            if ids is None:
                raise TypeError(f"broadcast({command!r}) needs arguments={{'task_id': ...}}")
            arguments["terminate"] = arguments.get("terminate", False) or command == "terminate"
            return self.revoke(
                ids, destination=nodes, reply=reply, limit=limit, callback=callback, **arguments
            )
        if command == "revoke_by_stamped_headers":
            headers = arguments.pop("headers", None) or {}
            replies = self.revoke_by_stamped_headers(headers, destination=nodes, reply=reply, **arguments)
            return answered(replies, limit, callback) if reply else None
        if command in INSPECT_COMMANDS:
            return self._inspected(INSPECT_COMMANDS[command], arguments, nodes, reply, limit, callback)
        return broadcast(self.app, nodes, command, arguments, reply, timeout, limit, callback)

    def _inspected(
        self, method: str, arguments: dict[str, Any], nodes: list[str], reply: bool, limit: Any, callback: Any
    ) -> Replies:
        if not reply:
            return None
        if not nodes:
            return []
        call = getattr(Inspect(self.app, destination=nodes), method)
        if method == "query_task":
            answers = call(*listed(arguments.get("ids")))
        elif method == "registered":
            answers = call(*listed(arguments.get("taskinfoitems")))
        else:
            answers = call(**arguments)
        return answered([{node: value} for node, value in (answers or {}).items()], limit, callback)

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
