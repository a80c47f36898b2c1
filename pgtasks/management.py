"""Management of tasks and queues from code, on App and Client: list (by page too), inspect,
cancel or terminate, resume and fork tasks, with their canvas links and masked arguments;
pause, resume and change queues; with the monitoring of queues and workers
(``pgtasks.monitoring``) and the runtime management of schedules (``pgtasks.scheduling``).
The dashboard acts through these methods only."""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import time
from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.events import record_task_state, task_state
from pgtasks.engine.ids import new_task_id as draw_task_id
from pgtasks.engine.redaction import masked_inputs, secret_args_of
from pgtasks.engine.settings import validate_queue_name
from pgtasks.monitoring import Monitoring, QueueInfo, epoch_ms
from pgtasks.result import AsyncResult
from pgtasks.scheduling import ScheduleManagement
from pgtasks.sysdb.records import (
    EventEntry,
    ForkParams,
    ListTasksParams,
    MessageInfo,
    QueueSettings,
    QueueUpsert,
    Status,
    TaskLinkInfo,
)
from pgtasks.task_info import StepInfo, TaskInfo, TaskPage

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine

__all__ = ["QueueInfo", "StepInfo", "TaskInfo", "TaskManagement", "TaskPage"]

# The commands a worker understands (Celery's remote control names); see control_worker.
WORKER_COMMANDS = (
    "shutdown",
    "pool_grow",
    "pool_shrink",
    "pool_restart",
    "autoscale",
    "add_consumer",
    "cancel_consumer",
    "time_limit",
    "rate_limit",
)
ABORTED = "ABORTED"  # the state an aborted task shows (celery.contrib.abortable.ABORTED)

# What set_queue_settings may change: every stored setting but the name and the pause.
QUEUE_SETTINGS = tuple(f.name for f in dataclasses.fields(QueueSettings) if f.name not in ("name", "paused"))


def _status(value: str | Status) -> Status:
    try:
        return Status(str(value).upper())
    except ValueError:
        known = ", ".join(s.value for s in Status)
        raise ConfigurationError(f"unknown status {value!r}; one of {known}") from None


def _cursor(text: str | None) -> tuple[int, int] | None:
    """The listing position a ``TaskPage.next_page`` cursor names."""
    if text is None:
        return None
    created, dot, seq = str(text).partition(".")
    if not (dot and created.isdecimal() and seq.isdecimal()):
        raise ConfigurationError(f"after must be the next_page of a TaskPage, not {text!r}")
    return int(created), int(seq)


def _list_params(
    status: str | Status | list[str | Status] | None,
    name: str | None,
    queue: str | None,
    worker: str | None,
    created_after: dt.datetime | None,
    created_before: dt.datetime | None,
    limit: int,
    newest_first: bool = True,
) -> ListTasksParams:
    """The filters of :meth:`TaskManagement.list_tasks`, checked."""
    statuses = [] if status is None else [status] if isinstance(status, (str, Status)) else status
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit < 2**63:
        raise ConfigurationError(f"limit must be a positive integer (below 2**63), not {limit!r}")
    return ListTasksParams(
        status=tuple(_status(s) for s in statuses),
        name=name,
        queue_name=queue,
        executor_id=worker,
        created_after_epoch_ms=epoch_ms(created_after),
        created_before_epoch_ms=epoch_ms(created_before),
        limit=limit,
        newest_first=newest_first,
    )


class TaskManagement(Monitoring, ScheduleManagement):
    """What App and Client share: results by id, task, queue and schedule management, the
    monitoring of queues and workers, closing. Needs ``self.engine``."""

    engine: Engine

    def list_tasks(
        self,
        status: str | Status | list[str | Status] | None = None,
        name: str | None = None,
        queue: str | None = None,
        created_after: dt.datetime | None = None,
        created_before: dt.datetime | None = None,
        limit: int = 100,
        newest_first: bool = True,
        worker: str | None = None,
    ) -> list[TaskInfo]:
        """Tasks filtered by status, name, queue, creation time (naive datetimes are UTC) and
        the worker running (or that last ran) them."""
        params = _list_params(status, name, queue, worker, created_after, created_before, limit, newest_first)
        return [TaskInfo.of(record) for record in self.engine.admin.tasks(params)]

    def task_page(
        self,
        status: str | Status | list[str | Status] | None = None,
        name: str | None = None,
        queue: str | None = None,
        created_after: dt.datetime | None = None,
        created_before: dt.datetime | None = None,
        limit: int = 50,
        worker: str | None = None,
        after: str | None = None,
    ) -> TaskPage:
        """One page of the tasks :meth:`list_tasks` finds, newest first: the first page, or
        the one after the page whose ``next_page`` is ``after``. Pages are read by key (no
        count, no offset), so the hundredth page costs what the first does."""
        params = _list_params(status, name, queue, worker, created_after, created_before, limit)
        params = dataclasses.replace(params, limit=limit + 1, after_key=_cursor(after))
        rows = self.engine.admin.tasks(params)
        last = rows[limit - 1] if len(rows) > limit else None
        cursor = None if last is None else f"{last.created_at}.{last.enqueue_seq}"
        return TaskPage(tuple(TaskInfo.of(record) for record in rows[:limit]), cursor)

    def get_task(self, task_id: str, steps: bool = True) -> TaskInfo | None:
        """One task and (unless ``steps`` is False) its recorded steps, or None."""
        admin = self.engine.admin
        record = admin.task(task_id)
        if record is None:
            return None
        return TaskInfo.of(record, admin.steps(task_id) if steps else None)

    def task_children(self, task_id: str) -> list[str]:
        """The ids of the tasks ``task_id`` sent and of those waiting for its result (the
        next task of a chain, a chord's body, an errback)."""
        return self.engine.admin.children(task_id)

    def task_children_many(self, task_ids: list[str]) -> dict[str, list[str]]:
        """:meth:`task_children` of each of ``task_ids`` (every id a key), in one query."""
        return self.engine.admin.children_many(list(task_ids))

    def task_events(self, task_id: str) -> list[EventEntry]:
        """Every value the task set with ``pgtasks.set_event`` (key, serialized value, step
        position), in step order; ``app.get_event`` reads the last one decoded."""
        return self.engine.admin.events(task_id)

    def task_messages(self, task_id: str) -> list[MessageInfo]:
        """The messages sent to the task (topic, serialized value, sent at, received), oldest
        first; the default topic is ``__default__``."""
        return self.engine.admin.messages(task_id)

    def task_links(self, task_id: str, limit: int = 200) -> list[TaskLinkInfo]:
        """The canvas links that start or end at ``task_id`` (``chain``, ``chord``,
        ``group``, ``errback``, ``replace``, and ``sent`` for a task sent from its body): one
        step of the graph of a workflow, at most ``limit`` links."""
        return self.engine.admin.links_around(task_id, limit)

    def shown_inputs(self, task: TaskInfo) -> str:
        """The task's stored arguments with those its task declares secret (``secret_args``)
        masked as ``'***'``; as stored when this process does not know the task (a Client
        has no task code)."""
        engine = self.engine
        secrets = secret_args_of(engine.registry, task.name)
        if secrets is None:
            return task.inputs
        shown, _ = masked_inputs(engine.codec, secrets, task.serialization, task.inputs, task.name)
        return shown

    def registered_task_names(self) -> list[str]:
        """The names of the tasks registered in this process, sorted (none for a Client)."""
        return sorted(self.engine.registry.names())

    def cancel_task(self, task_id: str, terminate: bool = False, signal: str = "SIGTERM") -> bool:
        """Cancel a task that has not finished. A waiting task never starts; a running one
        stops at its next step. With ``terminate``, the worker running it (prefork pool) also
        kills the process running it with ``signal``. Returns False if the task had already
        finished."""
        admin = self.engine.admin
        if not terminate:
            return admin.cancel(task_id)
        admin.request_terminate(task_id, signal)
        cancelled = admin.cancel(task_id)
        admin.wake_holder(task_id)  # cancelled first: the worker then ends it REVOKED
        return cancelled

    def revoke_task(self, task_id: str, terminate: bool = False, signal: str = "SIGTERM") -> bool:
        """Celery's revoke: :meth:`cancel_task`, and for an id no task has yet, the id is
        remembered as revoked (as Celery's workers remember revoked ids), so a task sent later
        under it ends cancelled (REVOKED) without running. Returns whether a task was
        cancelled now."""
        admin = self.engine.admin
        revoked = self.cancel_task(task_id, terminate, signal)
        # A task that arrives between the cancel and the remembering is cancelled instead.
        while not revoked and admin.task(task_id) is None:
            if admin.revoke_ahead(task_id, self.engine.settings.default_queue):
                break
            revoked = admin.cancel(task_id)
        return revoked

    def check_task_arguments(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """TypeError (``add() too many positional arguments``) if the task ``name`` registered
        in this process cannot be called with ``args`` and ``kwargs``; nothing is checked for
        a task this process does not know (a Client knows none) or whose signature Python
        cannot read."""
        registry = self.engine.registry
        if name not in registry:
            return
        fn = registry.get(name).fn
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{getattr(fn, '__name__', name)}() {exc}") from None

    def abort_task(self, task_id: str) -> bool:
        """Ask a running task to stop (Celery's ``AbortableTask``): its state becomes
        ``ABORTED``, which ``self.is_aborted()`` in the task sees; the task decides when to
        return. False if the task has finished or does not exist."""
        record = self.engine.admin.task(task_id)
        if record is None or record.status.is_terminal:
            return False
        record_task_state(self.engine, task_id, ABORTED)
        return True

    def task_custom_state(self, task_id: str) -> tuple[str, Any] | None:
        """The last state an unfinished task published (Celery's ``update_state``, or
        ``ABORTED`` after :meth:`abort_task`) and its meta, or None."""
        record = self.engine.admin.task(task_id)
        if record is None or record.status.is_terminal:
            return None
        return task_state(self.engine, task_id)

    def control_worker(
        self, worker: str, command: str, arguments: dict[str, Any] | None = None, timeout: float | None = 10.0
    ) -> dict[str, Any] | None:
        """Send a command to one worker (``worker``: its name, the executor id) and wait up
        to ``timeout`` seconds for its reply, ``{"ok": text}`` or ``{"error": text}``; None
        when it did not answer in time (or ``timeout`` is None: the command is sent, no
        reply awaited). Commands (Celery's remote control names): ``shutdown``;
        ``pool_grow`` / ``pool_shrink`` (``n``); ``pool_restart``; ``autoscale`` (``max``,
        ``min``); ``add_consumer`` / ``cancel_consumer`` (``queue``); ``time_limit``
        (``task_name``, ``soft``, ``hard``); ``rate_limit`` (``task_name``, ``rate_limit``).
        A worker refuses what it cannot do with an error naming why."""
        if command not in WORKER_COMMANDS:
            raise ConfigurationError(
                f"unknown worker command {command!r}; one of {', '.join(WORKER_COMMANDS)}"
            )
        admin = self.engine.admin
        command_id = admin.send_worker_command(worker, command, dict(arguments or {}))
        if timeout is None:
            return None
        deadline = time.monotonic() + timeout
        pause = 0.01
        while True:
            reply = admin.worker_command_reply(command_id)
            if reply is not None:
                return reply
            if time.monotonic() >= deadline:
                admin.forget_worker_command(command_id)
                return None
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.2)

    def resume_task(self, task_id: str) -> bool:
        """Re-enqueue a cancelled or dead-lettered task; it continues from its last recorded
        step with a fresh attempt count, on any worker version. False if not resumable."""
        return self.engine.admin.resume(task_id)

    def pause_queue(self, name: str) -> None:
        """Stop every worker from claiming tasks of queue ``name`` (tasks already running go
        on; new ones wait, and can still be sent) until :meth:`resume_queue`. Holds across
        worker restarts and deploys."""
        self.engine.admin.set_queue_paused(name, True)

    def resume_queue(self, name: str) -> None:
        """Let workers claim from queue ``name`` again; idle workers wake at once."""
        self.engine.admin.set_queue_paused(name, False)

    def set_queue_settings(self, name: str, **changes: Any) -> QueueSettings:
        """Change some stored settings of queue ``name`` (``concurrency``,
        ``worker_concurrency``, ``rate_limit_max`` with ``rate_limit_period_sec``,
        ``partition_queue``, ``polling_interval_sec``, ``result_expires_sec``, ...); the
        others keep their stored values. As ``pgtasks queue set``: it lasts until an app that
        declares another value for a setting deploys it. Returns the settings now stored."""
        validate_queue_name(name)
        unknown = sorted(set(changes) - set(QUEUE_SETTINGS))
        if unknown:
            raise ConfigurationError(
                f"unknown queue setting {', '.join(map(repr, unknown))}; one of {', '.join(QUEUE_SETTINGS)}"
            )
        admin = self.engine.admin
        current = next(iter(admin.queues((name,))), QueueSettings(name))
        return admin.upsert_queue(QueueUpsert(dataclasses.replace(current, **changes), frozenset(changes)))

    def prune_tasks(
        self, older_than: float | None = None, queue: str | None = None, dry_run: bool = False
    ) -> dict[str, int]:
        """Delete now, in small batches, the finished tasks older than ``older_than`` seconds
        (default: each queue's ``result_expires``), of one ``queue`` or all; with ``dry_run``
        only count them. Dead letters and tasks a waiting canvas still needs are kept. The
        counts per queue. As ``pgtasks prune``; workers do it on their own every minute."""
        admin = self.engine.admin
        return admin.prunable(older_than, queue) if dry_run else admin.prune(older_than, queue)

    def AsyncResult(self, task_id: str) -> AsyncResult:
        """The handle of any task by id."""
        return AsyncResult(task_id, self.engine)

    def close(self) -> None:
        """Close database connections (they reopen on next use)."""
        self.engine.close()

    def fork_task(
        self, task_id: str, start_step: int = 1, new_task_id: str | None = None, queue: str | None = None
    ) -> str:
        """Start a new task with the inputs of ``task_id`` that reuses its recorded steps
        before ``start_step`` (1-based) and runs the rest on the current code."""
        if isinstance(start_step, bool) or not isinstance(start_step, int) or start_step < 1:
            raise ConfigurationError(f"start_step is 1-based: an integer >= 1, not {start_step!r}")
        new_id = new_task_id or draw_task_id()
        if self.engine.admin.task(new_id) is not None:
            raise ConfigurationError(f"a task with id {new_id!r} exists already")
        try:
            forked = self.engine.admin.fork(ForkParams(task_id, new_id, start_step, queue))
        except KeyError:
            raise ConfigurationError(f"no task with id {task_id!r} to fork") from None
        return forked.task_id
