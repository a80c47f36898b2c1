"""Celery's ``celery.contrib.abortable``: tasks that check, while they run, whether someone
asked them to stop (``result.abort()`` records the state ``ABORTED``; the task looks with
``self.is_aborted()`` and returns early). As in Celery it is cooperative: nothing interrupts
the task; ``revoke(terminate=True)`` does."""

from __future__ import annotations

from typing import Any

from pgtasks.compat.celery.app.task import Task
from pgtasks.compat.celery.result.async_result import AsyncResult

__all__ = ["ABORTED", "AbortableAsyncResult", "AbortableTask"]

ABORTED = "ABORTED"


class AbortableAsyncResult(AsyncResult):
    """An AsyncResult that can ask its task to stop."""

    def is_aborted(self) -> bool:
        """True once :meth:`abort` was called (and the task has not ended since)."""
        return bool(self.state == ABORTED)

    def abort(self) -> Any:
        """Ask the task to stop: its state becomes ``ABORTED`` until it ends, which
        ``is_aborted()`` in the task sees. A task that has ended stays as it ended."""
        if self.ready():
            return None
        return self.backend.store_result(self.id, result=None, state=ABORTED)


class AbortableTask(Task):
    """A task whose body can call ``self.is_aborted()``."""

    abstract = True

    def AsyncResult(self, task_id: str, **kwargs: Any) -> AbortableAsyncResult:
        return AbortableAsyncResult(task_id, task_name=self.name, app=self.app)

    def is_aborted(self, **kwargs: Any) -> bool:
        """True when this task (or ``task_id=``) was asked to abort."""
        task_id = kwargs.get("task_id", self.request.id)
        if task_id is None:
            return False  # called outside a running task
        result = self.AsyncResult(str(task_id))
        return result.is_aborted() if isinstance(result, AbortableAsyncResult) else False
