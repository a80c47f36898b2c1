"""Celery's ``app.control.inspect()``, answered from the database: each live worker's row and
the report it publishes there (``pgtasks.worker_reports``, which Flower's ``/api/workers``
reads too), and the task rows. Replies have Celery's shape, ``{node name: reply}``, and are
None when no worker answers.

What differs from Celery, because tasks wait in the database rather than in a worker's
memory: ``scheduled`` lists each countdown or ETA task under the first live worker (by name)
consuming its queue, and ``revoked`` lists the same revoked ids for every worker (revokes are
rows, honoured by every worker, even one started later).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from pgtasks import worker_reports
from pgtasks.compat.bridge.json_safe import json_safe
from pgtasks.compat.celery.app.defaults import DEFAULTS
from pgtasks.compat.celery.app.utils import filter_hidden_settings
from pgtasks.management import TaskInfo
from pgtasks.sysdb.records import ExecutorInfo

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

# Celery's worker describes each registered task by these of its attributes, when set.
DEFAULT_TASK_INFO_ITEMS = ("exchange", "routing_key", "rate_limit")


class Inspect:
    """``app.control.inspect()``: ping, clock, active, scheduled, reserved, registered, stats,
    revoked, active_queues, query_task, conf, report, hello. ``destination`` limits the
    nodes."""

    def __init__(self, app: Celery, destination: Any = None, timeout: float = 1.0, **kwargs: Any) -> None:
        self.app = app
        self.destination = [destination] if isinstance(destination, str) else destination
        self.timeout = timeout

    def _live(self) -> list[ExecutorInfo]:
        """Every live worker (its heartbeat within its lease), by name."""
        return sorted((e for e, live in self.app.all_workers() if live), key=lambda e: e.executor_id)

    def _asked(self, live: list[ExecutorInfo]) -> list[ExecutorInfo]:
        return [e for e in live if not self.destination or e.executor_id in self.destination]

    def nodes(self) -> list[str]:
        return [e.executor_id for e in self._asked(self._live())]

    def _each(self, answer: Any) -> dict[str, Any] | None:
        """``{node: answer(worker, its report)}`` for each asked worker; None if none."""
        replies = {e.executor_id: answer(e, worker_reports.details_of(e)) for e in self._asked(self._live())}
        return replies or None

    def _inputs(self, task: TaskInfo) -> tuple[Any, Any]:
        args: Any = []
        kwargs: Any = {}
        with contextlib.suppress(Exception):  # unreadable inputs: shown empty
            args, kwargs = self.app.engine.codec.loads_inputs(task.serialization, task.inputs, task.name)
        return list(args), dict(kwargs)

    def _lists(self, safe: Any) -> dict[str, dict[str, Any]]:
        """Each asked worker's ``active``, ``reserved``, ``scheduled`` and ``revoked``."""
        live = self._live()
        waiting = worker_reports.waiting_of(self.app, live)
        return {
            e.executor_id: worker_reports.task_lists(
                self.app, e, worker_reports.details_of(e), waiting, self._inputs, reprs=bool(safe)
            )
            for e in self._asked(live)
        }

    def _list(self, which: str, safe: Any) -> dict[str, Any] | None:
        return {node: lists[which] for node, lists in self._lists(safe).items()} or None

    def ping(self) -> dict[str, Any] | None:
        return self._each(lambda e, d: {"ok": "pong"})

    def clock(self) -> dict[str, Any] | None:
        """Each worker's logical clock (its report's count)."""
        return self._each(lambda e, d: {"clock": int(d.get("clock") or 0)})

    def active(self, safe: Any = None) -> dict[str, Any] | None:
        """The tasks each worker runs, each with the pid of the process running it; with
        ``safe`` their arguments as reprs."""
        return self._list("active", safe)

    def reserved(self, safe: Any = None) -> dict[str, Any] | None:
        """The tasks each worker has claimed ahead of a free process (its prefetch)."""
        return self._list("reserved", safe)

    def scheduled(self, safe: Any = None) -> dict[str, Any] | None:
        """The countdown and ETA tasks waiting for their time (see the module)."""
        return self._list("scheduled", safe)

    def revoked(self) -> dict[str, Any] | None:
        """Ids of revoked tasks, newest first (see the module)."""
        return self._list("revoked", None)

    def hello(self, from_node: str, revoked: Any = None) -> dict[str, Any] | None:
        """Celery's mingle exchange, as a worker starting asks its peers: each asked worker
        but ``from_node`` answers ``{"revoked": [ids, oldest first], "clock": n}`` (``from_node``
        itself answers None). The ids in ``revoked`` are merged into theirs, as Celery's
        workers merge them: here, revoked for every worker (revokes are rows)."""
        if not isinstance(from_node, str) or not from_node:
            raise TypeError(f"hello() needs the asking node's name (from_node), not {from_node!r}")
        lists = self._lists(None)
        if revoked and any(node != from_node for node in lists):
            ids = [revoked] if isinstance(revoked, str) else revoked
            self.app.control.revoke(sorted({str(task_id) for task_id in ids}))
            lists = self._lists(None)
        clocks = self.clock() or {}
        answer: dict[str, Any] = {}
        for node, found in lists.items():
            oldest_first = list(reversed(found["revoked"]))
            mingle = {"revoked": oldest_first, "clock": clocks.get(node, {}).get("clock", 0)}
            answer[node] = None if node == from_node else mingle
        return answer or None

    def query_task(self, *ids: Any) -> dict[str, Any] | None:
        """``{node: {id: [state, request]}}`` of the given ids a worker runs (``active``) or
        holds (``reserved``: claimed ahead). A task waiting for its ETA is in neither, as in
        Celery (its worker reserves it when it is due): ``scheduled`` lists it."""
        groups = [g if isinstance(g, (list, tuple, set, frozenset)) else [g] for g in ids]
        wanted = {str(i) for group in groups for i in group}
        answer: dict[str, Any] = {}
        for node, lists in self._lists(None).items():
            found = {r["id"]: ["active", r] for r in lists["active"] if r["id"] in wanted}
            for request in lists["reserved"]:
                if request["id"] in wanted:
                    found[request["id"]] = ["reserved", request]
            answer[node] = found
        return answer or None

    def registered(self, *taskinfoitems: Any, builtins: bool = False) -> dict[str, Any] | None:
        """The task names each worker registered, sorted (Celery's own ``celery.*`` ones only
        with ``builtins=True``), each followed by the ``taskinfoitems`` it has a value for
        (``add [rate_limit=10/m]``; by default exchange, routing_key and rate_limit)."""
        items = taskinfoitems or DEFAULT_TASK_INFO_ITEMS

        def attribute(name: str, item: str) -> Any:
            if item == "name":  # known without the task (one this process did not import)
                return name
            task = self.app.tasks.get(name)
            return None if task is None else getattr(task, item, None)

        def names(e: ExecutorInfo, details: dict[str, Any]) -> list[str]:
            return worker_reports.registered_of(details, items, attribute, builtins)

        return self._each(names)

    registered_tasks = registered

    def stats(self) -> dict[str, Any] | None:
        """Each worker's statistics: tasks run by name, pid, uptime, pool and processes, the
        broker (the database, password masked), prefetch count, resource usage."""
        now = self.app.now_ms()

        def stats(e: ExecutorInfo, details: dict[str, Any]) -> dict[str, Any]:
            return {
                **worker_reports.stats_of(e, details, now),
                "hostname": e.hostname,
                "application_version": e.application_version,
                "queues": worker_reports.queues_of(e, details),
            }

        return self._each(stats)

    def active_queues(self) -> dict[str, Any] | None:
        """The queues each worker consumes now (``add_consumer`` and ``cancel_consumer``
        change them), in kombu's words."""
        kombu_queue, queues_of = worker_reports.kombu_queue, worker_reports.queues_of
        return self._each(lambda e, d: [kombu_queue(q) for q in queues_of(e, d)])

    def conf(self, with_defaults: bool = False) -> dict[str, Any] | None:
        """Each worker's settings (its app's, secrets masked, and pgtasks' own); with
        ``with_defaults`` Celery's defaults under them."""
        defaults = filter_hidden_settings(DEFAULTS) if with_defaults else {}

        def conf(e: ExecutorInfo, details: dict[str, Any]) -> dict[str, Any]:
            shown = {**defaults, **(details.get("conf") or {})}
            return {k: json_safe(v) for k, v in shown.items()}

        return self._each(conf)

    def report(self) -> dict[str, Any] | None:
        """Each worker's software and settings in a few lines (Celery's bug report)."""

        def report(e: ExecutorInfo, details: dict[str, Any]) -> dict[str, Any]:
            lines = [
                f"software -> {details.get('software', 'pgtasks')} on {e.hostname} (pid {e.pid})",
                f"pool -> {details.get('pool')} x {details.get('concurrency')}",
                f"queues -> {', '.join(worker_reports.queues_of(e, details))}",
                f"broker -> {details.get('database', '')}",
            ]
            return {"ok": "\n".join(lines)}

        return self._each(report)
