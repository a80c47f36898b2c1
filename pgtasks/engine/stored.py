"""States written by hand rather than by a worker: the write side of Celery's result backend
(``store_result``, ``mark_as_done``, ...). A final state ends the task (and releases or fails
what waits for it, in the same transaction); an unfinished one is published as the task's
custom state. A task id that no task has gets a row that no worker ever claims."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.events import record_task_state
from pgtasks.engine.failures import encode_exception
from pgtasks.engine.options import SendOptions, build_new_task
from pgtasks.sysdb.records import Status, StoredOutcome

if TYPE_CHECKING:
    from pgtasks.engine.runtime import Runtime

FINAL = (Status.SUCCESS, Status.ERROR, Status.CANCELLED)


def store_outcome(
    engine: Runtime, task_id: str, status: Status, value: Any = None, name: str | None = None
) -> None:
    """Record ``status`` for ``task_id``: SUCCESS with ``value`` as its result, ERROR or
    CANCELLED with ``value`` (an exception) as its error. Any other status only makes sure the
    row exists (use :func:`store_state` for an unfinished state)."""
    if not isinstance(task_id, str) or not task_id:
        raise ConfigurationError(f"a stored state needs a task id, not {task_id!r}")
    if status not in FINAL and status is not Status.WAITING:
        raise ConfigurationError(f"only SUCCESS, ERROR or CANCELLED can be stored, not {status.value}")
    record = engine.database.sysdb.task_get(task_id)
    tag = record.serialization if record is not None else None
    output = error = None
    if status is Status.SUCCESS and value is not None:
        tag, output = engine.codec.dumps(value, f"result stored for task {task_id}", tag)
    elif status is not Status.SUCCESS and isinstance(value, BaseException):
        error = encode_exception(value)
    task_name = name or (record.name if record is not None else "unknown")
    request = SendOptions(task_id=task_id).request(task_name)
    settings = engine.settings
    new = build_new_task(request, engine.codec, settings.default_queue, settings.max_recovery_attempts)
    params = StoredOutcome(new, status, output, error, engine.link_resolver())
    engine.database.sysdb.task_store_outcome(params)


def store_state(engine: Runtime, task_id: str, state: str, meta: Any = None, name: str | None = None) -> None:
    """Publish the unfinished ``state`` (STARTED, RETRY, a custom one) and its ``meta`` for
    ``task_id``, creating its row first if no task has that id."""
    store_outcome(engine, task_id, Status.WAITING, name=name)
    record_task_state(engine, task_id, state, meta)
