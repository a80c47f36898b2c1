"""``celery.app.task.Task``: the base class of every Celery task, with Celery's attributes,
defaults and methods. ``@app.task`` makes a subclass per function, as Celery does, so a
``base=`` class with hooks (``on_failure``, ``after_return``, ...) works unchanged."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import uuid
from typing import TYPE_CHECKING, Any, ClassVar

from pgtasks.compat import django_support, exceptions, retrying, states
from pgtasks.compat.current import current_app
from pgtasks.compat.eager import apply_eagerly
from pgtasks.compat.mapping import chunks, xmap, xstarmap
from pgtasks.compat.planning import replacement_of, send_replacement
from pgtasks.compat.request import Context, executing, request_of
from pgtasks.compat.sending import send_task, send_task_async
from pgtasks.compat.signatures import Signature
from pgtasks.compat.task_extras import TaskExtras
from pgtasks.engine.context import running_context
from pgtasks.engine.core import is_async_connection
from pgtasks.engine.events import record_task_state

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery
    from pgtasks.compat.result import AsyncResult, EagerResult

log = logging.getLogger("pgtasks.compat")


class Task(TaskExtras):
    """A Celery task. Class attributes are the defaults Celery documents."""

    name: ClassVar[str | None] = None
    typing: ClassVar[bool] = True
    max_retries: ClassVar[int | None] = 3
    default_retry_delay: ClassVar[float] = 180
    rate_limit: ClassVar[str | None] = None
    ignore_result: ClassVar[bool] = False
    trail: ClassVar[bool] = True
    send_events: ClassVar[bool] = True
    store_errors_even_if_ignored: ClassVar[bool] = False
    serializer: ClassVar[str] = "json"
    time_limit: ClassVar[float | None] = None
    soft_time_limit: ClassVar[float | None] = None
    autoregister: ClassVar[bool] = True
    track_started: ClassVar[bool] = False
    acks_late: ClassVar[bool] = False
    acks_on_failure_or_timeout: ClassVar[bool] = True
    reject_on_worker_lost: ClassVar[bool | None] = None
    priority: ClassVar[int | None] = None
    expires: ClassVar[Any] = None
    queue: ClassVar[str | None] = None
    resultrepr_maxsize: ClassVar[int] = 1024
    abstract: ClassVar[bool] = True
    autoretry_for: ClassVar[tuple[type[BaseException], ...]] = ()
    dont_autoretry_for: ClassVar[tuple[type[BaseException], ...]] = ()
    retry_kwargs: ClassVar[dict[str, Any]] = {}
    retry_backoff: ClassVar[bool | float] = False
    retry_backoff_max: ClassVar[float] = 600
    retry_jitter: ClassVar[bool] = True
    MaxRetriesExceededError = exceptions.MaxRetriesExceededError
    OperationalError = exceptions.OperationalError

    _app: Celery | None = None

    # -- identity ------------------------------------------------------------------------
    @property
    def app(self) -> Celery:
        """The app this task belongs to (a shared task: the current app)."""
        if self._app is not None:
            return self._app
        return current_app()

    @classmethod
    def overrides_call(cls) -> bool:
        """True when a subclass overrides ``__call__`` (Celery then calls it, not ``run``)."""
        return cls.__call__ is not Task.__call__

    def bind(self, app: Celery) -> Task:
        self._app = app
        return self

    def __repr__(self) -> str:
        return f"<@task: {self.name} of {self.app.main}>"

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """The body of the task (the decorated function)."""
        raise NotImplementedError("Tasks must define the run method.")

    @property
    def request(self) -> Context:
        """The current request (``self.request.id``, ``.retries``, ...)."""
        found = request_of(self)
        return found if found is not None else Context()

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the body here, as a plain call (``request.called_directly`` is True)."""
        current = request_of(self)
        if current is not None and not current.called_directly:
            return self.run(*args, **kwargs)  # a custom __call__ reached from the worker
        with executing(self, Context(args=args, kwargs=kwargs, called_directly=True)):
            return self.run(*args, **kwargs)

    def check_arguments(self, *args: Any, **kwargs: Any) -> None:
        """With ``typing`` (default): a TypeError now if the body cannot take these arguments."""
        if not self.typing:
            return
        try:
            inspect.signature(self.run).bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{getattr(self.run, '__name__', self.name)}() {exc}") from None
        except ValueError:
            return  # no signature to check (a builtin)

    def delay(self, *args: Any, **kwargs: Any) -> AsyncResult:
        """``apply_async(args, kwargs)``."""
        return self.apply_async(args, kwargs)

    def apply_async(
        self,
        args: Any = None,
        kwargs: Any = None,
        task_id: str | None = None,
        producer: Any = None,
        link: Any = None,
        link_error: Any = None,
        shadow: str | None = None,
        **options: Any,
    ) -> AsyncResult:
        """Send the task (or, with ``task_always_eager``, run it here and return an EagerResult).
        As Celery: ValueError when the task's soft time limit is above its hard one."""
        self._check_send(args, kwargs)
        app = self.app
        if app.conf.task_always_eager:
            return self.apply(
                args,
                kwargs,
                task_id=task_id or str(uuid.uuid4()),
                link=link,
                link_error=link_error,
                **options,
            )
        sending = self._sending(task_id, link, link_error, options)
        return self._handed_back(send_task(app, self.name or "", args, kwargs, **sending), options)

    async def delay_async(self, *args: Any, **kwargs: Any) -> AsyncResult:
        """:meth:`delay` for async code: awaiting it never blocks the event loop."""
        return await self.apply_async_async(args, kwargs)

    async def apply_async_async(
        self,
        args: Any = None,
        kwargs: Any = None,
        task_id: str | None = None,
        link: Any = None,
        link_error: Any = None,
        **options: Any,
    ) -> AsyncResult:
        """:meth:`apply_async` for async code (pgtasks' ``_async`` twin; Celery has none).
        ``conn=`` may be a ``psycopg.AsyncConnection``: the task is inserted in its
        transaction. Anything else (eager mode, callbacks) runs apply_async on a thread."""
        conn = options.get("conn")
        if conn is None or not is_async_connection(conn) or self.app.conf.task_always_eager:
            send = functools.partial(self.apply_async, args, kwargs, task_id=task_id)
            return await asyncio.to_thread(send, link=link, link_error=link_error, **options)
        self._check_send(args, kwargs)
        sending = self._sending(task_id, link, link_error, options)
        result = await send_task_async(self.app, self.name or "", args, kwargs, **sending)
        return self._handed_back(result, options)

    def _check_send(self, args: Any, kwargs: Any) -> None:
        """As Celery: ValueError when the soft time limit is above the hard one; TypeError when
        the body cannot take these arguments."""
        if self.soft_time_limit and self.time_limit and self.soft_time_limit > self.time_limit:
            raise ValueError("soft_time_limit must be less than or equal to time_limit")
        self.check_arguments(*(args or ()), **(kwargs or {}))

    def _sending(
        self, task_id: str | None, link: Any, link_error: Any, options: dict[str, Any]
    ) -> dict[str, Any]:
        """The keyword arguments of send_task for this task: the options, with its queue,
        priority and expiry where not given."""
        defaults = {"queue": self.queue, "priority": self.priority, "expires": self.expires}
        given = {k: v for k, v in defaults.items() if v is not None}
        return {"task": self, "task_id": task_id, "link": link, "link_error": link_error, **given, **options}

    def _handed_back(self, result: AsyncResult, options: dict[str, Any]) -> AsyncResult:
        if type(self).AsyncResult is not Task.AsyncResult:  # its own result class, as Celery's
            result = self.AsyncResult(result.id)  # result_cls=self.AsyncResult (AbortableTask)
        ignored = options.get("ignore_result")
        if self.ignore_result if ignored is None else ignored:
            result.ignored = True  # as Celery: get() returns None at once
        return result

    def apply(
        self,
        args: Any = None,
        kwargs: Any = None,
        link: Any = None,
        link_error: Any = None,
        task_id: str | None = None,
        retries: int | None = None,
        throw: bool | None = None,
        logfile: Any = None,
        loglevel: Any = None,
        headers: dict[str, Any] | None = None,
        **options: Any,
    ) -> EagerResult:
        """Run the task here, now, and return an EagerResult (retries run at once)."""
        return apply_eagerly(
            self,
            tuple(args or ()),
            dict(kwargs or {}),
            task_id=task_id,
            retries=retries or 0,
            throw=throw,
            headers=headers,
            options=options,
            link=link,
            link_error=link_error,
        )

    def delay_on_commit(self, *args: Any, **kwargs: Any) -> None:
        """Django: send the task when the current transaction commits (at once without Django)."""
        self.apply_async_on_commit(args, kwargs)

    def apply_async_on_commit(self, args: Any = None, kwargs: Any = None, **options: Any) -> None:
        if not django_support.on_commit(lambda: self.apply_async(args, kwargs, **options)):
            self.apply_async(args, kwargs, **options)

    def retry(
        self,
        args: Any = None,
        kwargs: Any = None,
        exc: BaseException | None = None,
        throw: bool = True,
        eta: Any = None,
        countdown: float | None = None,
        max_retries: int | None = None,
        **options: Any,
    ) -> exceptions.Retry:
        """Retry the task (see :mod:`pgtasks.compat.retrying`): raises Retry."""
        return retrying.retry(self, args, kwargs, exc, throw, eta, countdown, max_retries, **options)

    def AsyncResult(self, task_id: str, **kwargs: Any) -> AsyncResult:
        return self.app.AsyncResult(task_id, task_name=self.name, **kwargs)

    def update_state(
        self, task_id: str | None = None, state: str | None = None, meta: Any = None, **kwargs: Any
    ) -> None:
        """Record a custom state (``PROGRESS`` with ``meta={...}``): readers of the task's
        AsyncResult see it, and its meta as ``info``, until the task ends. Eagerly: kept on
        the request."""
        request = self.request
        if request.is_eager or request.called_directly:
            request.update(custom_state=state, custom_meta=meta)
            return
        task_id = task_id or request.id
        if task_id is None:
            raise ValueError(f"update_state() of {self.name!r} needs a task_id outside a running task")
        record_task_state(self.app.engine, task_id, state or states.PENDING, meta)

    # -- canvas --------------------------------------------------------------------------
    def signature(self, args: Any = None, *starargs: Any, **starkwargs: Any) -> Signature:
        return Signature(self, args, *starargs, **starkwargs)

    subtask = signature

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A signature of this task with these arguments (partial: more may be prepended)."""
        return self.signature(args, kwargs)

    def si(self, *args: Any, **kwargs: Any) -> Signature:
        """An immutable signature: a chain passes no result into it."""
        return self.signature(args, kwargs, immutable=True)

    def map(self, it: Any) -> Any:
        """One task calling this one on each item (``celery.map``)."""
        return xmap(self.s(), it, app=self.app)

    def starmap(self, it: Any) -> Any:
        """One task calling this one with each item unpacked (``celery.starmap``)."""
        return xstarmap(self.s(), it, app=self.app)

    def chunks(self, it: Any, n: int) -> Any:
        """``it`` split into chunks of ``n`` argument tuples, one ``starmap`` task per chunk."""
        return chunks(self.s(), it, n, app=self.app)

    def replace(self, sig: Any) -> Any:
        """Replace this running task by ``sig`` (a task, chain, group or chord): the task ends
        with the replacement's outcome (a group's: the list of its results), and whatever
        waited for it (chain, chord, callbacks, errbacks) follows from there. Raises
        :class:`~celery.exceptions.Ignore` in a worker; eagerly, returns the result."""
        sig = replacement_of(self.app, sig)
        # Errbacks called in the failing worker go with the replacement (on every task of a
        # chain or chord, where only the one that fails calls them); the others stay linked
        # to this task, which fails with its replacement.
        for errback in self.request.errbacks or ():
            sig.link_error(Signature(dict(errback), app=self.app))
        return self.on_replace(sig)

    def on_replace(self, sig: Any) -> Any:
        """Called by :meth:`replace` with the replacing signature; sends it (or, eagerly, runs
        it and returns its result). Override and call ``super().on_replace(sig)``."""
        request = self.request
        if request.is_eager or request.called_directly:
            return sig.apply().get()
        ctx = running_context()
        if ctx is None or request.id != ctx.task_id:
            raise RuntimeError(f"{self.name}.replace() must be called by the task while it runs")
        replacing = (ctx.task_id, ctx.executor_id, ctx.record.claim_token)
        send_replacement(self.app, sig, ctx.task_id, request.root_id, replacing)
        raise exceptions.Replaced("Replaced by new task")

    def send_event(self, type_: str, retry: bool = True, retry_policy: Any = None, **fields: Any) -> None:
        """Celery events are not emitted by pgtasks: accepted and ignored."""

    # -- hooks (override in a base class) -------------------------------------------------
    def before_start(self, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Called in the worker before the body runs."""

    def on_success(self, retval: Any, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Called after the body returned."""

    def on_failure(
        self, exc: BaseException, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any], einfo: Any
    ) -> None:
        """Called after the body raised (not for a retry)."""

    def on_retry(
        self, exc: Any, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any], einfo: Any
    ) -> None:
        """Called when the task is to be retried."""

    def after_return(
        self,
        status: str,
        retval: Any,
        task_id: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        einfo: Any,
    ) -> None:
        """Called after every attempt, whatever its state."""
