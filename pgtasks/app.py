"""App: the application object. Registers tasks and steps, sends tasks, reads results."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar, overload

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.flow import declare_queue
from pgtasks.engine.redaction import SECRET_ARGS_OPTION, SecretArgs
from pgtasks.engine.registry import (
    Registry,
    TaskDefinition,
    check_task_options,
    is_async,
    refuse_async_generator,
)
from pgtasks.engine.settings import DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_RESULT_EXPIRES, Settings
from pgtasks.engine.steps import StepOptions, run_step, run_step_async
from pgtasks.management import TaskManagement
from pgtasks.result import AsyncResult
from pgtasks.scheduling import ScheduleSource, Scheduling
from pgtasks.sending import Sending
from pgtasks.sysdb.records import QueueSettings
from pgtasks.sysdb.urls import DEFAULT_SCHEMA, resolve_database_url
from pgtasks.task import Task, task_name_for
from pgtasks.waiting import Messaging

F = TypeVar("F", bound=Callable[..., Any])


class App(Sending, Messaging, Scheduling, TaskManagement):
    """A pgtasks application.

    ``App("proj", database_url="postgresql://...")``; without a URL, ``PGTASKS_DATABASE_URL``
    or else ``sqlite:///pgtasks.sqlite3`` in the working directory. Nothing connects until
    the first use, which also creates or migrates the schema.
    """

    def __init__(
        self,
        main: str | None = None,
        database_url: str | None = None,
        *,
        schema: str = DEFAULT_SCHEMA,
        default_queue: str = "default",
        serializer: str = "json",
        accept_content: Sequence[str] = ("json",),
        application_version: str | None = None,
        max_recovery_attempts: int = 100,
        lease_seconds: float = 30.0,
        poll_interval: float = 1.0,
        pool_size: int = 10,
        log_task_args: bool = False,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        result_expires: float | None = DEFAULT_RESULT_EXPIRES,
    ) -> None:
        self.main = main
        if isinstance(accept_content, str):  # iterated, it would be its letters
            raise ConfigurationError(
                f"accept_content must be a list of serializer names such as ['json'], not {accept_content!r}"
            )
        overrides: dict[str, Any] = {}
        if application_version is not None:
            overrides["application_version"] = application_version
        settings = Settings(
            database_url=resolve_database_url(database_url),
            schema=schema,
            default_queue=default_queue,
            serializer=serializer,
            accept_content=tuple(accept_content),
            max_recovery_attempts=max_recovery_attempts,
            lease_seconds=lease_seconds,
            poll_interval=poll_interval,
            pool_size=pool_size,
            log_task_args=log_task_args,
            max_payload_bytes=max_payload_bytes,
            result_expires=result_expires,
            **overrides,
        )
        self.engine = Engine(settings, Registry())
        self._tasks: dict[str, Task] = {}
        self._schedule_sources: list[ScheduleSource] = []

    def __repr__(self) -> str:
        return f"<pgtasks.App {self.main or '__main__'} {self.engine.settings.database_url.split('://')[0]}>"

    @property
    def settings(self) -> Settings:
        return self.engine.settings

    # -- registration --------------------------------------------------------------------
    @overload
    def task(self, fn: Callable[..., Any], /) -> Task: ...
    @overload
    def task(
        self,
        /,
        *,
        name: str | None = None,
        queue: str | None = None,
        max_recovery_attempts: int | None = None,
        secret_args: Sequence[str | int] | str | int = (),
    ) -> Callable[[Callable[..., Any]], Task]: ...

    def task(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        queue: str | None = None,
        max_recovery_attempts: int | None = None,
        secret_args: Sequence[str | int] | str | int = (),
    ) -> Task | Callable[[Callable[..., Any]], Task]:
        """Register a durable task: ``@app.task`` or ``@app.task(name=, queue=, ...)``.

        ``secret_args``: parameter names and/or 0-based positions whose values the worker
        never logs: shown as ``'***'`` when ``log_task_args`` is on, and scrubbed from the
        logged error message if the task fails. The arguments are still stored (in the
        database) as given."""

        def register(func: Callable[..., Any]) -> Task:
            check_task_options(func, name, queue, max_recovery_attempts)
            refuse_async_generator(func, "task")
            secrets = SecretArgs.for_function(func, secret_args)
            definition = TaskDefinition(
                name=name or task_name_for(func, self.main),
                fn=func,
                queue=queue,
                max_recovery_attempts=(
                    self.settings.max_recovery_attempts
                    if max_recovery_attempts is None
                    else max_recovery_attempts
                ),
                options={SECRET_ARGS_OPTION: secrets} if secrets else {},
            )
            self.engine.registry.add(definition)
            task = Task(self.engine, definition)
            self._tasks[definition.name] = task
            return task

        return register(fn) if fn is not None else register

    @overload
    def step(self, fn: F, /) -> F: ...
    @overload
    def step(
        self,
        /,
        *,
        name: str | None = None,
        retries: int = 0,
        backoff: float = 1.0,
        backoff_rate: float = 2.0,
        max_backoff: float = 60.0,
    ) -> Callable[[F], F]: ...

    def step(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        retries: int = 0,
        backoff: float = 1.0,
        backoff_rate: float = 2.0,
        max_backoff: float = 60.0,
    ) -> F | Callable[[F], F]:
        """Make a function a durable step: inside a task it runs once and its result is
        checkpointed; a re-run of the task returns the checkpoint instead of running it again.
        A failing step is retried ``retries`` times with exponential backoff."""

        def wrap(func: F) -> F:
            refuse_async_generator(func, "step")
            options = StepOptions(
                name=name or func.__qualname__,
                retries=retries,
                backoff=backoff,
                backoff_rate=backoff_rate,
                max_backoff=max_backoff,
            )

            if is_async(func):

                @functools.wraps(func)
                async def durable_async_step(*args: Any, **kwargs: Any) -> Any:
                    return await run_step_async(options, func, args, kwargs)

                return durable_async_step  # type: ignore[return-value]

            @functools.wraps(func)
            def durable_step(*args: Any, **kwargs: Any) -> Any:
                return run_step(options, func, args, kwargs)

            return durable_step  # type: ignore[return-value]

        return wrap(fn) if fn is not None else wrap

    def queue(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        worker_concurrency: int | None = None,
        rate_limit: str | tuple[int, float] | None = None,
        priority_enabled: bool = False,
        partitioned: bool = False,
        polling_interval: float = 1.0,
        result_expires: float | timedelta | None = None,
    ) -> QueueSettings:
        """Declare a queue's flow control and retention; workers write it to the ``queues``
        table when they start (later changes with ``pgtasks queue set`` last until the next
        deploy).

        ``concurrency``: at most N tasks of the queue run at once across all workers (per
        partition key when ``partitioned``). ``worker_concurrency``: at most N on one
        worker. ``rate_limit``: ``"10/m"`` or ``(10, 60.0)``: at most 10 starts per minute
        across all workers. ``result_expires``: seconds (or a timedelta) its finished tasks
        are kept, instead of the app's ``result_expires``; 0 keeps them until deleted by hand.
        """
        settings = declare_queue(
            name,
            concurrency,
            worker_concurrency,
            rate_limit,
            priority_enabled,
            partitioned,
            polling_interval,
            result_expires,
        )
        self.engine.declared_queues[name] = settings
        return settings

    @property
    def registered_tasks(self) -> dict[str, Task]:
        """Registered tasks by name."""
        return dict(self._tasks)

    # -- sending and results -------------------------------------------------------------
    def send_task(
        self,
        name: str,
        args: Sequence[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """Send a task by name: ``enqueue`` under Celery's name (the canonical verb is
        :meth:`~pgtasks.sending.Sending.enqueue`, shared with ``Client``)."""
        return self.enqueue(name, args, kwargs, **options)

    def version(self) -> str:
        """This application's version (configured, or a hash of the registered tasks)."""
        return self.engine.version()
