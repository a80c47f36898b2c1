"""Celery's ``celery.result.EagerResult``: the result of a task run in this process by
``apply()`` or eager mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery import states
from pgtasks.compat.celery._state import task_join_will_block
from pgtasks.compat.celery.exceptions import TaskRevokedError
from pgtasks.compat.celery.result.async_result import SYNC_SUBTASK_MESSAGE, AsyncResult
from pgtasks.compat.celery.result.base import picklable_class
from pgtasks.sysdb.records import TaskRecord

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["EagerResult"]


class EagerResult(AsyncResult):
    """The result of a task run in this process by ``apply()`` or eager mode."""

    def __init__(
        self,
        id: str,
        ret_value: Any,
        state: str,
        traceback: str | None = None,
        name: str | None = None,
        app: Celery | None = None,
        args: Any = None,
        kwargs: Any = None,
        retries: int = 0,
    ) -> None:
        self.id = id
        self._result = ret_value
        self._state = state
        self._traceback = traceback
        self._name = name
        self._parent = None
        self.app = app
        self._args, self._kwargs, self._retries = args, kwargs, retries

    def __reduce__(self) -> tuple[Any, ...]:
        values = (self._result, self._state, self._traceback, self._name, None)
        return picklable_class(type(self)), (self.id, *values, self._args, self._kwargs, self._retries)

    def record(self) -> TaskRecord | None:
        return None

    def _watch(self, weak: bool) -> None:
        self.on_ready(self)  # it ran here: then()'s callbacks run at once

    @property
    def exists(self) -> bool:
        return True

    @property
    def state(self) -> str:
        return self._state

    status = state

    @property
    def result(self) -> Any:
        return self._result

    info = result

    @property
    def traceback(self) -> str | None:
        return self._traceback

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def args(self) -> Any:
        return self._args

    @property
    def kwargs(self) -> Any:
        return self._kwargs

    @property
    def retries(self) -> int:
        return self._retries

    def ready(self) -> bool:
        return True

    def get(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        no_ack: bool = True,
        follow_parents: bool = True,
        callback: Any = None,
        on_message: Any = None,
        on_interval: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> Any:
        """The value (or, with ``propagate``, the exception) at once; the waiting options
        are accepted and ignored, as in Celery. Where waiting is refused (a worker's task, an
        eager ``apply_async``'s: see ``task_join_will_block``) it raises RuntimeError unless
        ``disable_sync_subtasks=False`` or ``allow_join_result()``."""
        if disable_sync_subtasks and task_join_will_block():
            raise RuntimeError(SYNC_SUBTASK_MESSAGE)
        if self._state == states.SUCCESS:
            return self._result
        if self._state in states.PROPAGATE_STATES and propagate:
            raise self._result if isinstance(self._result, BaseException) else TaskRevokedError(self.id)
        # as Celery's: an ignored, rejected or retrying task's result (the Ignore, ...) is not a value
        return self._result if self._state in states.PROPAGATE_STATES else None

    wait = get

    def revoke(self, *args: Any, **kwargs: Any) -> None:
        self._state = states.REVOKED

    def forget(self) -> None:
        pass
