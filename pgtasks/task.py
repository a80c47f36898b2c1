"""Task: what ``@app.task`` returns. Calling it runs the function here; ``delay`` and
``apply_async`` send it to the database for a worker to run."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pgtasks.engine.options import SendOptions
from pgtasks.engine.registry import TaskDefinition
from pgtasks.result import AsyncResult
from pgtasks.sending import send, send_async, send_many, send_many_async

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


class Task:
    """A registered task. ``task(...)`` calls the function directly, as in Celery."""

    def __init__(self, engine: Engine, definition: TaskDefinition) -> None:
        self._engine = engine
        self.definition = definition
        self._plain_options: SendOptions | None = None
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
        args: Sequence[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """Send the task with options (those of :class:`~pgtasks.engine.options.SendOptions`:
        ``task_id``, ``queue``, ``countdown``, ``eta``, ``priority``, ``deduplication_id``,
        ``partition_key``, ``expires``, ``max_recovery_attempts``, ``on_duplicate``, ``conn``);
        one INSERT. An unknown option raises ConfigurationError."""
        return send(self._engine, self.name, args, kwargs, self._options(options))

    async def delay_async(self, *args: Any, **kwargs: Any) -> AsyncResult:
        """:meth:`delay` for async code: the insert never blocks the event loop."""
        return await self.apply_async_async(args, kwargs)

    async def apply_async_async(
        self,
        args: Sequence[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """:meth:`apply_async` for async code (every name with an ``_async`` suffix is the
        awaitable twin of the name without it). ``conn=`` may be a ``psycopg.AsyncConnection``:
        the task is inserted in that connection's transaction."""
        return await send_async(self._engine, self.name, args, kwargs, self._options(options))

    def map_enqueue(
        self,
        arg_lists: Sequence[Sequence[Any]],
        task_ids: Sequence[str] | None = None,
        **options: Any,
    ) -> list[AsyncResult]:
        """Send one task per argument tuple in a single INSERT (bulk enqueue), each with the
        same ``options`` (as for ``apply_async``, except ``task_id``). ``task_ids``, one per
        task, lets the caller know the ids before the insert (a retry after an ambiguous error
        then returns the tasks it made instead of sending them again)."""
        return send_many(self._engine, self.name, arg_lists, task_ids, self._options(options))

    async def map_enqueue_async(
        self,
        arg_lists: Sequence[Sequence[Any]],
        task_ids: Sequence[str] | None = None,
        **options: Any,
    ) -> list[AsyncResult]:
        """:meth:`map_enqueue` for async code: one INSERT, awaited."""
        return await send_many_async(self._engine, self.name, arg_lists, task_ids, self._options(options))

    def _options(self, options: dict[str, Any]) -> SendOptions:
        """``options`` checked, with this task's queue and recovery limit as defaults (those
        of a call without options made once: ``delay()``'s)."""
        if not options and self._plain_options is not None:
            return self._plain_options
        checked = SendOptions.from_kwargs(**options).with_defaults(
            queue=self.definition.queue, max_recovery_attempts=self.definition.max_recovery_attempts
        )
        if not options:
            self._plain_options = checked
        return checked


def task_name_for(fn: Callable[..., Any], main: str | None) -> str:
    """Celery's naming: ``module.function``, with ``__main__`` replaced by the app's name."""
    module = fn.__module__
    if module == "__main__" and main:
        module = main
    return f"{module}.{fn.__name__}"
