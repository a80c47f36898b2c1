"""pgtasks tasks as Celery's event state and result backend show them, for Flower's API: the
state names (``RECEIVED``, ``STARTED``, ``SUCCESS``, ``FAILURE``, ``RETRY``, ``REVOKED``),
arguments and results as Python reprs, times as epoch seconds, ETAs in ISO 8601, errors as
``Type('message')``. The dashboard knows Flower's formats; it reads pgtasks' records only.

How pgtasks' states map (a task a worker claimed but holds until a process is free is
*prefetched*: its worker reports it):

==========================  ===============================================
pgtasks                     Celery
==========================  ===============================================
ENQUEUED, WAITING           PENDING (RETRY once it has retried)
DELAYED (countdown, ETA)    RECEIVED (RETRY once it has retried)
PENDING                     STARTED; RECEIVED while prefetched
SUCCESS                     SUCCESS
ERROR, dead-lettered        FAILURE
CANCELLED                   REVOKED
==========================  ===============================================
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pgtasks.management import TaskInfo
from pgtasks.sysdb.records import EndReason, Status
from pgtasks.worker_reports import inputs_of, iso, parsed_json, seconds

FLOWER_STATES = ("PENDING", "RECEIVED", "STARTED", "SUCCESS", "FAILURE", "RETRY", "REVOKED", "REJECTED")
# The pgtasks statuses a Celery state may come from (some need the task itself to decide).
STATUSES_OF_STATE: dict[str, tuple[Status, ...]] = {
    "PENDING": (Status.ENQUEUED, Status.WAITING),
    "RECEIVED": (Status.DELAYED, Status.PENDING),
    "STARTED": (Status.PENDING,),
    "SUCCESS": (Status.SUCCESS,),
    "FAILURE": (Status.ERROR, Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED),
    "RETRY": (Status.ENQUEUED, Status.WAITING, Status.DELAYED),
    "REVOKED": (Status.CANCELLED,),
    "REJECTED": (),
}
# Statuses in the alphabetical order of the Celery states they show (sort_by=state).
STATUS_ORDER = (
    Status.ERROR,
    Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED,
    Status.ENQUEUED,
    Status.WAITING,
    Status.DELAYED,
    Status.CANCELLED,
    Status.PENDING,
    Status.SUCCESS,
)
UNSTARTED = (Status.ENQUEUED, Status.WAITING, Status.DELAYED)


def flower_state(task: TaskInfo, prefetched: bool = False) -> str:
    """The state Flower's event state would show for ``task``."""
    status = task.status
    if status is Status.SUCCESS:
        return "SUCCESS"
    if status in (Status.ERROR, Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED):
        return "FAILURE"
    if status is Status.CANCELLED:
        return "REVOKED"
    if status is Status.PENDING:
        return "RECEIVED" if prefetched else "STARTED"
    if task.retries > 0:
        return "RETRY"
    return "RECEIVED" if status is Status.DELAYED else "PENDING"


def result_state(task: TaskInfo | None, custom: str | None = None) -> str:
    """The state Celery's result backend gives (``AsyncResult(id).state``): PENDING until the
    task ends (STARTED is not tracked by default), RETRY after a retry, a state the running
    task published (``update_state``, ``ABORTED``), else the end state."""
    if task is None:
        return "PENDING"
    if task.status.is_terminal:
        return flower_state(task)
    if custom is not None:
        return custom
    return "RETRY" if task.retries > 0 else "PENDING"


def result_value(task: TaskInfo) -> Any:
    """A task's return value as JSON carries it (the stored text when it is not JSON)."""
    ok, value = parsed_json(task.output)
    return value if ok else task.output


def exception_repr(error: str | None) -> tuple[str | None, str | None]:
    """(``Type('message')``, traceback) of a stored error, as Celery shows a raised one."""
    if not error:
        return None, None
    ok, data = parsed_json(error)
    if not ok or not isinstance(data, dict):
        return error[:500], None
    name = str(data.get("type") or "Exception").rpartition(".")[2]
    args = data.get("args")
    shown = ", ".join(repr(a) for a in args) if isinstance(args, list) else repr(str(data.get("message", "")))
    traceback = data.get("traceback")
    return f"{name}({shown})", traceback if isinstance(traceback, str) and traceback else None


def not_registered(task: TaskInfo) -> bool:
    """Whether the task failed because its worker does not know its name."""
    if task.status is not Status.ERROR or not task.error:
        return False
    ok, data = parsed_json(task.error)
    return ok and isinstance(data, dict) and str(data.get("type") or "").endswith("TaskNotRegistered")


def revoked_repr(task: TaskInfo) -> str:
    """What Celery's backend stores for a revoked task: ``TaskRevokedError('<why>')``."""
    if task.end_reason is EndReason.EXPIRED:
        why = "expired"
    elif task.started_at_epoch_ms is not None and task.executor_id is not None:
        why = "terminated"  # it had started: stopped by a revoke with terminate
    else:
        why = "revoked"
    return f"TaskRevokedError({why!r})"


class TaskView:
    """Flower's task objects (``/api/task/info``, ``/api/tasks``) for pgtasks tasks.
    ``prefetched``: the ids the workers report holding unstarted; ``shown_inputs`` gives a
    task's stored arguments with its secret ones masked; ``holders``: the worker that holds
    the countdown and ETA tasks of each queue (in Celery a worker receives them at once)."""

    def __init__(
        self, prefetched: Collection[str], shown_inputs: Any, holders: dict[str, str] | None = None
    ) -> None:
        self.prefetched = prefetched
        self.shown_inputs = shown_inputs
        self.holders = holders or {}

    def state(self, task: TaskInfo) -> str:
        return flower_state(task, task.task_id in self.prefetched)

    def task(
        self, task: TaskInfo, children: list[str] | None = None, worker_last: bool = False
    ) -> dict[str, Any]:
        state = self.state(task)
        ended = seconds(task.updated_at)
        received = task.started_at_epoch_ms if task.status not in UNSTARTED else None
        if task.status is Status.DELAYED:
            received = task.created_at  # Celery's worker holds a countdown or ETA task: received
        started = None if state in ("RECEIVED", "PENDING", "RETRY") else seconds(task.started_at_epoch_ms)
        args, kwargs = self.arguments(task)
        exception, traceback = exception_repr(task.error) if state in ("FAILURE", "RETRY") else (None, None)
        runtime = None
        if state == "SUCCESS" and task.started_at_epoch_ms is not None:
            runtime = max(0.0, (task.updated_at - task.started_at_epoch_ms) / 1000)
        body: dict[str, Any] = {
            "uuid": task.task_id,
            "name": task.name,
            "state": state,
            "received": seconds(received),
            "sent": None,
            "started": started,
            "rejected": None,
            "succeeded": ended if state == "SUCCESS" else None,
            "failed": ended if state == "FAILURE" else None,
            "retried": ended if state == "RETRY" else None,
            "revoked": ended if state == "REVOKED" else None,
            "args": args,
            "kwargs": kwargs,
            "eta": iso(task.delay_until_epoch_ms),
            "expires": iso(task.expires_at_epoch_ms),
            "retries": task.retries,
            "worker": task.executor_id,
            "result": repr(result_value(task)) if state == "SUCCESS" else None,
            "exception": exception,
            "timestamp": ended,
            "runtime": runtime,
            "traceback": traceback,
            "exchange": None,
            "routing_key": None,
            "clock": task.updated_at,
            "client": None,
            "root": task.root_task_id or task.task_id,
            "root_id": task.root_task_id or task.task_id,
            "parent": task.parent_task_id,
            "parent_id": task.parent_task_id,
            "children": children or [],
        }
        if task.status is Status.DELAYED and body["worker"] is None:
            body["worker"] = self.holders.get(task.queue_name)
        if not_registered(task):
            # Celery's worker refuses a task it does not know before it is received: an event
            # state knows it from its task-failed only (no name, no arguments, no times)
            for key in (
                "name",
                "received",
                "started",
                "args",
                "kwargs",
                "retries",
                "root",
                "root_id",
                "traceback",
            ):
                body[key] = None
            body["exception"] = f"NotRegistered({task.name!r})"
        if worker_last:
            body["worker"] = body.pop("worker")
        return body

    def arguments(self, task: TaskInfo) -> tuple[str | None, str | None]:
        """args and kwargs as Python reprs, as the worker saw them (a retried task's args
        arrive as a tuple, as in Celery); the stored text when it is not JSON. What the sender
        asked to be shown instead (Celery's ``argsrepr``/``kwargsrepr``) wins."""
        args_shown, kwargs_shown = task.shown_arguments
        if args_shown is not None and kwargs_shown is not None:
            return args_shown, kwargs_shown
        shown = self.shown_inputs(task)
        inputs = inputs_of(shown)
        if inputs is None:
            return shown, "{}"
        args, kwargs = inputs
        if isinstance(args, list) and task.retries > 0:
            args = tuple(args)
        return (
            repr(args) if args_shown is None else args_shown,
            repr(kwargs) if kwargs_shown is None else kwargs_shown,
        )
