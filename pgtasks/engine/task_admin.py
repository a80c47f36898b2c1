"""Management of tasks, queues and executors through the engine: what the management API,
the CLI and the Celery ``control``/result objects read and change (list, get, cancel,
resume, fork, children and groups, queue settings, live executors, migrations). A task id
no task can have is refused before any query (lookups.py)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pgtasks.engine import retention
from pgtasks.engine.connection import DatabaseHandle
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.lookups import checked_task_id, storable_text
from pgtasks.engine.settings import validate_queue_name
from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.commands import command_announcement
from pgtasks.sysdb.provisioning import migration_script
from pgtasks.sysdb.records import (
    EventEntry,
    ExecutorInfo,
    ForkParams,
    LinkResolver,
    ListTasksParams,
    MessageInfo,
    MigrationInfo,
    QueueActivity,
    QueueLatency,
    QueuePause,
    QueueSettings,
    QueueStats,
    QueueUpsert,
    RecentTasksParams,
    StepRecord,
    TaskLinkInfo,
    TaskRecord,
    WorkerCommand,
)

TERMINATE_KEY = "terminate"  # the event a revoke with terminate=True leaves for the worker


class TaskAdmin:
    """The engine's management operations (``engine.admin``), over its ``database`` handle;
    ``result_expires`` is the app's age of finished tasks (what :meth:`prune` deletes by
    default). Records returned here are storage records; the public API turns them into its
    own."""

    def __init__(self, database: DatabaseHandle, result_expires: float | None, links: LinkResolver) -> None:
        self._database = database
        self._result_expires = result_expires
        self._links = links

    # -- tasks ---------------------------------------------------------------------------
    def _reader(self) -> SystemDatabase:
        """Where monitoring reads go: the ``read_url`` replica when there is one."""
        return self._database.reader()

    def tasks(self, params: ListTasksParams) -> list[TaskRecord]:
        """Tasks filtered as ``params`` says (from the ``read_url`` replica when there is one)."""
        _check_filters(params, ("name", "queue_name", "executor_id"))
        return self._reader().tasks_list(params)

    def recent_task_ids(self, params: RecentTasksParams) -> list[str]:
        """The ids of the recent tasks, filtered and ordered as ``params`` says (replica)."""
        _check_filters(params, ("name", "executor_id"))
        return self._reader().tasks_recent_ids(params)

    def tasks_by_id(self, task_ids: list[str]) -> list[TaskRecord]:
        """The tasks among ``task_ids`` that exist, in no particular order (replica)."""
        return self._reader().tasks_get_many(task_ids)

    def recent_task_names(self, window: int) -> list[str]:
        """The names of the tasks workers received among the ``window`` newest (replica)."""
        return self._reader().task_names_recent(window)

    def task(self, task_id: str) -> TaskRecord | None:
        """One task, or None."""
        return self._database.sysdb.task_get(checked_task_id(task_id))

    def steps(self, task_id: str) -> list[StepRecord]:
        """The recorded steps of one task, in order."""
        return self._database.sysdb.steps_get(checked_task_id(task_id))

    def events(self, task_id: str) -> list[EventEntry]:
        """Every value the task set with ``set_event``, in step order (docs/waiting.md)."""
        return self._database.sysdb.events_of(checked_task_id(task_id))

    def messages(self, task_id: str) -> list[MessageInfo]:
        """The messages sent to the task, oldest first, received or not."""
        return self._database.sysdb.messages_of(checked_task_id(task_id))

    def cancel(self, task_id: str) -> bool:
        """Cancel an unfinished task; False if it had finished (or does not exist). What
        waits on it is resolved at once: a chord fails, a chain is cancelled."""
        return self._database.sysdb.task_cancel(checked_task_id(task_id), self._links)

    def revoke_ahead(self, task_id: str, queue_name: str) -> bool:
        """Remember ``task_id`` as revoked before it is sent: a finished, cancelled task under
        that id (kept as long as finished tasks are, see retention), which a task sent later
        with the id returns instead of running; False if a task has the id already."""
        return self._database.sysdb.task_revoke_ahead(checked_task_id(task_id), queue_name)

    def request_terminate(self, task_id: str, signal_name: str) -> bool:
        """Ask the worker running ``task_id`` to stop its process with ``signal_name``
        (prefork pools); False if there is no such task. It does so at its next heartbeat, or
        at once when :meth:`wake_holder` is called after the task is cancelled."""
        return self._database.sysdb.task_event_set(
            checked_task_id(task_id), TERMINATE_KEY, json.dumps(signal_name), "json"
        )

    def wake_holder(self, task_id: str) -> None:
        """Wake the worker holding ``task_id`` as a command does (where the database has
        notifications), so that it acts on the task's terminate request now."""
        sysdb = self._database.sysdb
        record = sysdb.task_get(checked_task_id(task_id))
        if record is not None and record.executor_id:
            sysdb.queues_announce((command_announcement(record.executor_id),))

    def resume(self, task_id: str) -> bool:
        """Re-enqueue a cancelled or dead-lettered task; False if it is not resumable."""
        return self._database.sysdb.task_resume(checked_task_id(task_id))

    def fork(self, params: ForkParams) -> TaskRecord:
        """A new task with the inputs and early steps of another (KeyError if unknown).

        ``start_step`` may be at most one past the task's last recorded step: beyond that
        there is no history to keep, and the fork would silently run from that last step+1."""
        sysdb = self._database.sysdb
        if sysdb.task_get(checked_task_id(params.source_id)) is None:
            raise KeyError(params.source_id)
        recorded = max((s.function_id for s in sysdb.steps_get(params.source_id)), default=0)
        if params.start_step > recorded + 1:
            raise ConfigurationError(
                f"start_step {params.start_step} is past the recorded steps of task {params.source_id!r}: "
                f"it has {recorded} recorded step{'' if recorded == 1 else 's'}, so start_step "
                f"must be from 1 to {recorded + 1}"
            )
        return sysdb.task_fork(params)

    def children(self, task_id: str) -> list[str]:
        """The tasks ``task_id`` sent and those waiting for its result."""
        return self._database.sysdb.task_children(checked_task_id(task_id))

    def children_many(self, task_ids: list[str]) -> dict[str, list[str]]:
        """:meth:`children` of each of ``task_ids``, read in one statement."""
        return self._database.sysdb.task_children_many([checked_task_id(t) for t in task_ids])

    def links_around(self, task_id: str, limit: int = 200) -> list[TaskLinkInfo]:
        """The canvas links that start or end at ``task_id`` (chain, chord, group, errback,
        replace) and the tasks it sent ('sent'): one step of the graph around a task."""
        return self._database.sysdb.task_links_around(checked_task_id(task_id), limit)

    def group_members(self, group_id: str) -> list[str]:
        """The task ids of a group sent with ``group_id``, in order."""
        return self._database.sysdb.group_members(group_id)

    # -- executors, queues, the database -------------------------------------------------
    def prune(
        self, older_than: float | None = None, queue: str | None = None, max_batches: int | None = None
    ) -> dict[str, int]:
        """Delete finished tasks older than ``older_than`` seconds (default: the
        ``result_expires`` setting) in small batches; the counts per queue."""
        return retention.prune(
            self._database.sysdb, self._result_expires, older_than, queue, max_batches=max_batches
        )

    def prunable(self, older_than: float | None = None, queue: str | None = None) -> dict[str, int]:
        """What :meth:`prune` would delete now, per queue (a dry run)."""
        return retention.prunable(self._database.sysdb, self._result_expires, older_than, queue)

    def forget(self, task_id: str) -> bool:
        """Delete one finished task now (False: unfinished, needed by a canvas, or unknown)."""
        return self._database.sysdb.task_forget(checked_task_id(task_id))

    def executors(self) -> list[ExecutorInfo]:
        """Every registered executor, live or not (compare heartbeats with :meth:`now_ms`)."""
        return self._database.sysdb.executors_list()

    def send_worker_command(self, executor_id: str, command: str, arguments: dict[str, Any]) -> str:
        """Store ``command`` for worker ``executor_id`` (and wake it); its id, to read the reply."""
        command_id = str(uuid.uuid4())
        self._database.sysdb.worker_command_send(
            WorkerCommand(command_id, executor_id, command, json.dumps(arguments))
        )
        return command_id

    def worker_command_reply(self, command_id: str) -> dict[str, Any] | None:
        """The worker's reply to a command (forgotten once read), or None while unanswered."""
        sysdb = self._database.sysdb
        found = sysdb.worker_command_get(command_id)
        if found is None or found.reply is None:
            return None
        sysdb.worker_command_forget(command_id)
        reply = json.loads(found.reply)
        return reply if isinstance(reply, dict) else {"error": f"a reply that is not an object: {reply!r}"}

    def forget_worker_command(self, command_id: str) -> None:
        """Withdraw a command whose reply is no longer awaited."""
        self._database.sysdb.worker_command_forget(command_id)

    def now_ms(self) -> int:
        """The database server's clock, in epoch milliseconds."""
        return self._database.sysdb.now_ms()

    def dialect(self) -> str:
        """``postgres`` or ``sqlite``."""
        return self._database.target.dialect

    def queues(self, names: tuple[str, ...] = ()) -> list[QueueSettings]:
        """Stored queue settings: those of ``names``, or all."""
        return self._database.sysdb.queues_get(names)

    def upsert_queue(self, params: QueueUpsert) -> QueueSettings:
        """Create or update one queue's settings."""
        return self._database.sysdb.queue_upsert(params)

    def queue_stats(self) -> list[QueueStats]:
        """Unfinished tasks by queue and state, and the oldest waiting task's due time."""
        return self._reader().queue_stats()

    def queue_activity(self, window_ms: int, bucket_ms: int) -> list[QueueActivity]:
        """Tasks started in the last ``window_ms`` by queue, bucket and state now."""
        return self._reader().queue_activity(window_ms, bucket_ms)

    def queue_latency(self, window_ms: int, sample: int = 10_000) -> list[QueueLatency]:
        """Enqueue-to-start latency p50/p95 per queue over the tasks started in the last
        ``window_ms`` (at most the ``sample`` latest per queue)."""
        return self._reader().queue_latency(window_ms, sample)

    def set_queue_paused(self, name: str, paused: bool) -> QueueSettings:
        """Pause (no worker claims its tasks from the moment this returns) or resume a queue
        (its idle workers wake at once); the queue's row is created if it has none."""
        validate_queue_name(name)
        return self._database.sysdb.queue_set_paused(QueuePause(name, paused))

    def migrate(self) -> list[MigrationInfo]:
        """Apply the migrations the database lacks; return those applied now."""
        return self._database.migrate()

    def migration_sql(self) -> str:
        """The SQL of the migrations the database has not applied yet (all for a new one),
        for a database administrator to run; applies nothing."""
        target, applied = self._database.pending_migrations()
        return migration_script(target.dialect, target.schema, applied)


def _check_filters(params: object, fields: tuple[str, ...]) -> None:
    """A filter's text the database cannot compare with (a NUL in a name typed into the
    dashboard) is refused naming it, not sent to the driver."""
    for field in fields:
        value = getattr(params, field)
        if isinstance(value, str):
            storable_text(value, f"{field} filter")
