"""Task: what ``@app.task`` returns. Calling it runs the function here; ``delay`` and
``apply_async`` send it to the database for a worker to run."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgtasks.engine.options import EnqueueRequest
from pgtasks.engine.registry import TaskDefinition
from pgtasks.result import AsyncResult
from pgtasks.sending import send_by_name

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


class Task:
    """A registered task. ``task(...)`` calls the function directly, as in Celery."""

    def __init__(self, engine: Engine, definition: TaskDefinition) -> None:
        self._engine = engine
        self.definition = definition
        functools.update_wrapper(self, definition.fn)

    @property
    def name(self) -> str:
        return self.definition.name

    def __repr__(self) -> str:
        return f"<Task {self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.definition.fn(*args, **kwargs)

    def delay(self, *args: Any, **kwargs: Any) -> AsyncResult:
        """Send the task with these arguments; return its handle at once."""
        return self.apply_async(args, kwargs)

    def apply_async(
        self,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        *,
        task_id: str | None = None,
        queue: str | None = None,
        countdown: float | None = None,
        eta: dt.datetime | None = None,
        priority: int = 0,
        deduplication_id: str | None = None,
        partition_key: str | None = None,
        expires: float | dt.datetime | None = None,
        on_duplicate: str = "raise",
        conn: Any = None,
    ) -> AsyncResult:
        """Send the task with options; one INSERT.

        ``task_id`` re-used: the existing task is returned, never run twice. ``countdown``
        (seconds) or ``eta`` (datetime; naive means UTC) keep it DELAYED in the database.
        ``priority``: lower runs first. ``deduplication_id``: refused (DuplicateTaskError) while
        another unfinished task on the queue holds it, or with ``on_duplicate="return"`` the
        holder's handle is returned. ``partition_key``: on a partitioned queue, the concurrency
        limit applies per key. ``expires`` (seconds or datetime): not started by then, the
        task is cancelled and never runs. ``conn``: a psycopg connection whose open
        transaction the insert joins.
        """
        return send_by_name(
            self._engine,
            self.name,
            args,
            kwargs,
            task_id=task_id,
            queue=self.definition.queue if queue is None else queue,
            countdown=countdown,
            eta=eta,
            priority=priority,
            deduplication_id=deduplication_id,
            partition_key=partition_key,
            max_recovery_attempts=self.definition.max_recovery_attempts,
            expires=expires,
            on_duplicate=on_duplicate,
            conn=conn,
        )

    def map_enqueue(
        self,
        arg_lists: list[tuple[Any, ...] | list[Any]],
        task_ids: list[str] | None = None,
        **options: Any,
    ) -> list[AsyncResult]:
        """Send one task per argument tuple in a single INSERT (bulk enqueue). ``task_ids``,
        one per task, lets the caller know the ids before the insert (a retry after an
        ambiguous error then returns the tasks it made instead of sending them again)."""
        if task_ids is not None and len(task_ids) != len(arg_lists):
            raise ValueError(f"map_enqueue got {len(task_ids)} task_ids for {len(arg_lists)} tasks")
        ids: list[str | None] = list(task_ids) if task_ids is not None else [None] * len(arg_lists)
        requests = [
            EnqueueRequest(
                name=self.name,
                args=tuple(a),
                task_id=task_id,
                queue=options.get("queue", self.definition.queue),
                priority=options.get("priority", 0),
                countdown=options.get("countdown"),
                max_recovery_attempts=self.definition.max_recovery_attempts,
            )
            for a, task_id in zip(arg_lists, ids, strict=True)
        ]
        return [
            AsyncResult(i, self._engine) for i in self._engine.enqueue(requests, conn=options.get("conn"))
        ]


def task_name_for(fn: Callable[..., Any], main: str | None) -> str:
    """Celery's naming: ``module.function``, with ``__main__`` replaced by the app's name."""
    module = fn.__module__
    if module == "__main__" and main:
        module = main
    return f"{module}.{fn.__name__}"
