"""What a worker says about itself and how it answers the commands sent to it (Flower's worker
controls, Celery's remote control names), both through the database.

- The report (``executors.details``, JSON), written at every lease round: the registered tasks
  and their options, the pool, its size and processes, the queues consumed now, the tasks it
  runs (with the pid running each) and holds unstarted (prefetched), how many of each name it
  ran, its resource usage and its database URL with the password masked. Flower's
  ``/api/workers`` is drawn from it.
- The commands (``worker_commands`` rows), read when the worker is woken for one (NOTIFY on
  PostgreSQL) and at every lease round: each gets its reply, ``{"ok": text}`` or
  ``{"error": text}`` with Celery's texts where Celery has them.
"""

from __future__ import annotations

import json
import logging
import resource
import threading
from collections.abc import Callable
from typing import Any

from pgtasks.engine.worker_api import WorkerApi
from pgtasks.sysdb.records import WorkerCommand
from pgtasks.sysdb.urls import redact_url

log = logging.getLogger("pgtasks.worker")

COMMAND_MAX_AGE_MS = 60_000  # a command older than this when the worker reads it is not acted on
# An application's own commands (a Celery app's @control_command / @inspect_command): called
# with the worker's name, the command and its arguments for a command the worker does not
# know itself; returns the reply (JSON values), or UNKNOWN_COMMAND when it has none either.
CustomCommands = Callable[[str, str, dict[str, Any]], Any]
UNKNOWN_COMMAND: Any = object()
RUSAGE_FIELDS = (
    "utime", "stime", "maxrss", "ixrss", "idrss", "isrss", "minflt", "majflt", "nswap",
    "inblock", "oublock", "msgsnd", "msgrcv", "nsignals", "nvcsw", "nivcsw",
)  # fmt: skip


def rusage() -> dict[str, float | int]:
    """This process's resource usage, as Celery's ``stats`` reports it."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {f: round(getattr(usage, "ru_" + f), 3) if f.endswith("time") else getattr(usage, "ru_" + f)
            for f in RUSAGE_FIELDS}  # fmt: skip


def inspected_conf(database_url: str, modules: list[str]) -> dict[str, Any]:
    """The settings Celery's ``inspect conf`` shows of a worker, as they are in pgtasks: the
    database is broker and result backend (password masked), times are UTC, every state is
    recorded, tasks are claimed ahead (prefetch)."""
    url = redact_url(database_url)
    return {
        "broker_url": url,
        "result_backend": url,
        "deprecated_settings": None,
        "timezone": "UTC",
        "enable_utc": True,
        "result_extended": True,
        "worker_send_task_events": True,
        "broker_connection_retry_on_startup": True,
        "worker_disable_prefetch": False,
        "include": sorted(modules),
    }


class WorkerControl:
    """The report and the command answers of one worker. ``describe`` gives the worker's
    moving parts (running, prefetched, processes, totals) for the report; ``consume`` and
    ``stop_consuming`` change the consumed queues; ``shutdown`` starts a warm shutdown;
    ``resize`` grows or shrinks the pool (ValueError when it cannot); ``custom`` answers the
    application's own commands."""

    def __init__(
        self,
        store: WorkerApi,
        executor_id: str,
        static: dict[str, Any],
        describe: Callable[[], dict[str, Any]],
        consume: Callable[[str], bool],
        stop_consuming: Callable[[str], bool],
        shutdown: Callable[[], None],
        resize: Callable[[int], None],
        custom: CustomCommands | None = None,
    ) -> None:
        self._store = store
        self.executor_id = executor_id
        self._static = static
        self._describe = describe
        self._consume = consume
        self._stop_consuming = stop_consuming
        self._shutdown = shutdown
        self._resize = resize
        self._custom = custom
        self._lock = threading.Lock()  # one reader of the commands at a time
        self._clock = 0

    def report(self) -> None:
        """Publish the report (see the module)."""
        self._clock += 1
        details = {**self._static, **self._describe(), "rusage": rusage(), "clock": self._clock}
        self._store.report(self.executor_id, json.dumps(details))

    def answer(self) -> None:
        """Act on the pending commands, oldest first, and reply to each. The report is
        written before the replies, so that whoever reads a reply reads the change with it
        (``add_consumer`` then ``inspect active_queues``, as on Celery)."""
        with self._lock:
            answered = []
            for command in self._store.pending_commands(self.executor_id, COMMAND_MAX_AGE_MS):
                try:
                    reply = json.dumps(self._act(command))
                except Exception as exc:  # a bad command must not stop the worker
                    log.exception("worker command %s failed", command.command)
                    reply = json.dumps({"error": repr(exc)})
                answered.append((command, reply))
            if answered:
                try:
                    self.report()
                except Exception:  # the replies must still go out: a command is acted on once
                    log.exception("could not write the worker's report")
            for command, reply in answered:
                self._store.reply_command(command.command_id, reply)
                if command.command == "shutdown":
                    log.warning("Got shutdown from remote (control command %s)", command.command_id)
                    self._shutdown()
        if not answered:
            self.report()

    def _act(self, command: WorkerCommand) -> Any:
        arguments = json.loads(command.arguments or "{}")
        name = command.command
        if name == "shutdown":
            return {"ok": "shutting down"}
        if name == "add_consumer":
            queue = str(arguments.get("queue"))
            if self._consume(queue):
                return {"ok": f"add consumer {queue}"}
            return {"ok": f"already consuming from {queue!r}"}
        if name == "cancel_consumer":
            queue = str(arguments.get("queue"))
            self._stop_consuming(queue)
            return {"ok": f"no longer consuming from {queue}"}
        if name == "enable_events":  # every state change is a row: events are always on
            return {"ok": "task events already enabled"}
        if name == "disable_events":
            return {"error": "pgtasks records every task state in the database: events cannot be disabled"}
        if name == "heartbeat":
            return {"ok": "heartbeat"}  # the report below is written at once
        if name == "autoscale":
            return {"error": "ValueError('Autoscale not enabled')"}
        if name == "pool_restart":
            return {"error": "ValueError('Pool restarts not enabled')"}
        if name in ("pool_grow", "pool_shrink"):
            n = int(arguments.get("n", 1))
            try:
                self._resize(n if name == "pool_grow" else -n)
            except ValueError as exc:
                return {"error": repr(exc)}
            return {"ok": f"pool will {'grow' if name == 'pool_grow' else 'shrink'}"}
        if name == "election":
            gossip = "election is Celery's worker-to-worker gossip"
            return {"error": f"{gossip}: pgtasks workers coordinate through the database"}
        if name in ("time_limit", "rate_limit"):
            what = "time limits" if name == "time_limit" else "rate limits"
            return {"error": f"pgtasks sets {what} in the task's code or per queue (pgtasks queue set)"}
        if self._custom is not None:
            reply = self._custom(self.executor_id, name, arguments)
            if reply is not UNKNOWN_COMMAND:
                return reply
        return {"error": f"unknown command {name!r}"}
