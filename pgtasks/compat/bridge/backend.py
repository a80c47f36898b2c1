"""``app.backend``: Celery's result-backend API over pgtasks' own tables. There is no separate
result store: a task's row is its result, so reads go through the same records as
``AsyncResult`` and writes (``store_result``, ``mark_as_*``) through the engine, which ends the
task and releases or fails what waits for it in the same transaction.

Where pgtasks differs: ``forget`` and ``cleanup`` keep the rows (they are the history; the
retention of finished tasks is the operator's), and a group saved by hand is stored as a
finished ``celery.group`` row holding its members' ids.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.django_results import mirror_of
from pgtasks.compat.bridge.exception_meta import exception_to_python, prepare_exception
from pgtasks.compat.celery import states
from pgtasks.compat.celery.exceptions import TaskRevokedError, TimeoutError
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.result.group_result import GroupResult
from pgtasks.engine.stored import store_outcome, store_state
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.records import Status
from pgtasks.sysdb.urls import redact_url

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

GROUP_TASK = "celery.group"
_FINAL = {states.SUCCESS: Status.SUCCESS, states.FAILURE: Status.ERROR, states.REVOKED: Status.CANCELLED}


class DatabaseBackend:
    """The result backend of a pgtasks app: the system database itself."""

    persistent = True
    supports_native_join = True
    supports_autoexpire = False
    implements_incr = False
    READY_STATES = states.READY_STATES
    UNREADY_STATES = states.UNREADY_STATES
    EXCEPTION_STATES = states.EXCEPTION_STATES

    def __init__(self, app: Celery, url: str | None = None, **kwargs: Any) -> None:
        self.app = app
        self._url = url

    @property
    def url(self) -> str:
        return self._url or self.app.engine.settings.database_url

    def __repr__(self) -> str:
        return f"<DatabaseBackend: {self.as_uri()}>"

    def as_uri(self, include_password: bool = False) -> str:
        """The database URL (password masked unless ``include_password``)."""
        return self.url if include_password else redact_url(self.url)

    def ensure_chords_allowed(self) -> None:
        """Chords always work on pgtasks (Celery refuses them on some backends)."""

    @property
    def serializer(self) -> str:
        return str(self.app.conf.result_serializer or "json")

    def prepare_exception(self, exc: BaseException, serializer: str | None = None) -> Any:
        """Celery's dict of an exception (the exception itself with the pickle serializer)."""
        return prepare_exception(exc, serializer or self.serializer)

    def exception_to_python(self, exc: Any) -> Any:
        """An exception from Celery's dict of one (``meta["result"]`` of a failed task as
        Celery's backends store it); an exception, as pgtasks gives it, is returned as is."""
        return exception_to_python(exc)

    # -- reading -------------------------------------------------------------------------
    def _result(self, task_id: str) -> AsyncResult:
        return AsyncResult(task_id, backend=self, app=self.app)

    def get_task_meta(self, task_id: str, cache: bool = True) -> dict[str, Any]:
        """The task's state as Celery's backends return it: ``task_id``, ``status``,
        ``result`` (the exception for a failure), ``traceback``, ``children``,
        ``date_done``, and ``name``/``args``/``kwargs``/``worker``/``retries``/``queue``."""
        result = self._result(task_id)
        record = result.record()
        state = result._state_of(record)
        children = result.children if record is not None else None
        return {
            "task_id": task_id,
            "status": state,
            "result": result._value_of(record),
            "traceback": result.traceback if state in states.EXCEPTION_STATES else None,
            "children": [c.as_tuple() for c in children or []],
            "date_done": result.date_done,
            "name": record.name if record is not None else None,
            "args": result.args,
            "kwargs": result.kwargs,
            "worker": record.executor_id if record is not None else None,
            "retries": record.retries if record is not None else None,
            "queue": record.queue_name if record is not None else None,
        }

    def get_state(self, task_id: str) -> str:
        return self._result(task_id).state

    get_status = get_state

    def get_result(self, task_id: str) -> Any:
        """The return value, or the exception of a failed task."""
        return self._result(task_id).result

    def get_traceback(self, task_id: str) -> str | None:
        return self._result(task_id).traceback

    def get_children(self, task_id: str) -> list[Any] | None:
        children = self._result(task_id).children
        return [c.as_tuple() for c in children] if children else None

    def wait_for(
        self,
        task_id: str,
        timeout: float | None = None,
        interval: float = 0.5,
        no_ack: bool = True,
        on_interval: Any = None,
    ) -> dict[str, Any]:
        """Wait until the task is ready and return its meta; TimeoutError after ``timeout``
        (the wait of ``AsyncResult.get``, allowed inside a task as Celery's backends allow it)."""
        self._result(task_id).get(
            timeout=timeout,
            propagate=False,
            interval=interval,
            on_interval=on_interval,
            disable_sync_subtasks=False,
        )
        return self.get_task_meta(task_id)

    def wait_for_pending(self, result: AsyncResult, timeout: float | None = None, **kwargs: Any) -> Any:
        return result.get(timeout=timeout, **kwargs)

    def get_many(
        self,
        task_ids: Iterable[str],
        timeout: float | None = None,
        interval: float = 0.5,
        no_ack: bool = True,
        on_message: Any = None,
        on_interval: Any = None,
        max_iterations: int | None = None,
        READY_STATES: frozenset[str] = states.READY_STATES,
        **kwargs: Any,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(task_id, meta)`` for each task as it becomes ready; TimeoutError after ``timeout``."""
        waiting = list(dict.fromkeys(task_ids))
        polls = Backoff(interval, interval, jitter=0.0).retrying(timeout, last_try_at_deadline=True)
        iterations = 0
        while waiting:
            for task_id in list(waiting):
                meta = self.get_task_meta(task_id)
                if meta["status"] in READY_STATES:
                    waiting.remove(task_id)
                    if on_message is not None:
                        on_message(meta)
                    yield task_id, meta
            iterations += 1
            if not waiting or (max_iterations is not None and iterations >= max_iterations):
                return
            if on_interval is not None:
                on_interval()
            pause = polls.next_delay()
            if pause is None:
                raise TimeoutError("The operation timed out.")
            time.sleep(pause)

    # -- writing -------------------------------------------------------------------------
    def store_result(
        self,
        task_id: str,
        result: Any,
        state: str,
        traceback: str | None = None,
        request: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Record ``state`` for ``task_id``: a ready state ends the task (SUCCESS with
        ``result``; FAILURE or REVOKED with ``result`` as the exception) and releases or fails
        what waits for it; any other state is shown, with ``result`` as its meta, until the
        task ends. A task id no task has gets a row of its own."""
        if not isinstance(state, str) or not state:
            raise ValueError(f"store_result() needs a state name, not {state!r}")
        name = getattr(request, "task", None) if request is not None else None
        name = name if isinstance(name, str) else None
        final = _FINAL.get(state)
        if final is None:
            store_state(self.app.engine, task_id, state, result, name=name)
        elif final is Status.SUCCESS:
            store_outcome(self.app.engine, task_id, final, result, name=name)
        else:
            if not isinstance(result, BaseException):
                raise TypeError(f"store_result({state}) needs the exception as result, not {result!r}")
            store_outcome(self.app.engine, task_id, final, result, name=name)
        return result

    def mark_as_started(self, task_id: str, **meta: Any) -> Any:
        return self.store_result(task_id, meta, states.STARTED)

    def mark_as_done(
        self,
        task_id: str,
        result: Any,
        request: Any = None,
        store_result: bool = True,
        state: str = states.SUCCESS,
    ) -> None:
        if store_result:
            self.store_result(task_id, result, state, request=request)

    def mark_as_failure(
        self,
        task_id: str,
        exc: BaseException,
        traceback: str | None = None,
        request: Any = None,
        store_result: bool = True,
        call_errbacks: bool = True,
        state: str = states.FAILURE,
    ) -> None:
        if store_result:
            self.store_result(task_id, exc, state, traceback=traceback, request=request)

    def mark_as_revoked(
        self,
        task_id: str,
        reason: str = "",
        request: Any = None,
        store_result: bool = True,
        state: str = states.REVOKED,
    ) -> None:
        if store_result:
            self.store_result(task_id, TaskRevokedError(reason), state, request=request)

    def mark_as_retry(
        self,
        task_id: str,
        exc: BaseException,
        traceback: str | None = None,
        request: Any = None,
        store_result: bool = True,
        state: str = states.RETRY,
    ) -> None:
        if store_result:
            self.store_result(task_id, {"exc_type": type(exc).__name__, "exc_message": str(exc)}, state)

    def forget(self, task_id: str) -> None:
        """Delete one finished task's result now (see ``AsyncResult.forget``)."""
        self.app.engine.admin.forget(task_id)

    def cleanup(self) -> None:
        """Delete the results past ``result_expires`` now (workers also do it every minute),
        and the mirrored rows past it (django-celery-results' ``TaskResult`` and
        ``GroupResult``), which its backend's ``cleanup`` deletes on Celery."""
        self.app.engine.admin.prune()
        mirror = mirror_of(self.app)
        if mirror is not None:
            mirror.cleanup()

    # -- groups --------------------------------------------------------------------------
    def save_group(self, group_id: str, result: GroupResult) -> GroupResult:
        """Store a group's members so that :meth:`restore_group` finds them."""
        ids = [r.id for r in result.results]
        store_outcome(self.app.engine, group_id, Status.SUCCESS, ids, name=GROUP_TASK)
        mirror = mirror_of(self.app)
        if mirror is not None:  # django-celery-results' GroupResult row, as its backend writes it
            mirror.save_group(group_id, result)
        return result

    def restore_group(self, group_id: str, cache: bool = True) -> GroupResult | None:
        """The group sent (or saved) with id ``group_id``, or None (also once deleted)."""
        record = self.app.engine.get_task(group_id)
        saved = record is not None and record.name == GROUP_TASK
        if saved and record is not None and record.status is not Status.SUCCESS:
            return None  # deleted
        members = self.app.engine.admin.group_members(group_id)
        if not members:
            if not saved or record is None:
                return None
            members = list(self.app.engine.result_of(record) or [])
        return GroupResult(group_id, [self.app.AsyncResult(m) for m in members], app=self.app)

    def delete_group(self, group_id: str) -> None:
        """Forget a group: :meth:`restore_group` finds it no more (a sent group's tasks and
        their links stay: they are the history; a marker row says the group was deleted)."""
        record = self.app.engine.get_task(group_id)
        if record is None or record.name == GROUP_TASK:
            deleted = TaskRevokedError("group deleted")
            store_outcome(self.app.engine, group_id, Status.CANCELLED, deleted, name=GROUP_TASK)
        mirror = mirror_of(self.app)
        if mirror is not None:
            mirror.delete_group(group_id)

    def on_chord_part_return(self, request: Any, state: str, result: Any, **kwargs: Any) -> None:
        """Chords are advanced by the outcome of each header task, in its own transaction."""
