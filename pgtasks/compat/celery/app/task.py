"""Celery's ``celery.app.task``: :class:`Task`, the base class of every Celery task, with
Celery's attributes, defaults and methods, and :class:`Context`, a task's ``request``.

``@app.task`` makes a subclass per function, as Celery does, so a ``base=`` class with hooks
(``on_failure``, ``after_return``, ...) works unchanged. What sending, planning and running a
task mean on pgtasks is the bridge's (``compat/bridge/``); the Task calls it.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pgtasks.compat.bridge import django_support
from pgtasks.compat.bridge.django_results import running_task_mirror
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.message_options import check_eager_serializer
from pgtasks.compat.bridge.planning import add_to_running_chord, replace_running_task, replacement_of
from pgtasks.compat.bridge.retries import request_retry
from pgtasks.compat.bridge.sending import check_call, send_for_task, send_for_task_async
from pgtasks.compat.celery import exceptions, states
from pgtasks.compat.celery._state import (
    RequestStack,
    executing,
    get_current_app,
    joins_allowed,
    pop_request,
    push_request,
    request_of,
)
from pgtasks.compat.celery.app.annotations import resolve_all
from pgtasks.compat.celery.canvas.mapping import chunks, xmap, xstarmap
from pgtasks.compat.celery.canvas.signature import Signature
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.events import record_task_state
from pgtasks.engine.ids import new_task_id

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.result.async_result import AsyncResult
    from pgtasks.compat.celery.result.eager_result import EagerResult

__all__ = ["Context", "Task"]

log = logging.getLogger("pgtasks.compat")


class Context:
    """``self.request``, Celery's task request: every attribute Celery documents, None or empty
    by default."""

    id: str | None = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    retries: int = 0
    is_eager: bool = False
    called_directly: bool = True
    hostname: str | None = None
    eta: str | None = None
    expires: str | None = None
    root_id: str | None = None
    parent_id: str | None = None
    group: str | None = None
    group_index: int | None = None
    chord: Any = None
    chain: Any = None
    callbacks: Any = None
    errbacks: Any = None
    headers: dict[str, Any] | None = None
    delivery_info: dict[str, Any] | None = None
    reply_to: str | None = None
    correlation_id: str | None = None
    origin: str | None = None
    utc: bool = True
    timelimit: tuple[float | None, float | None] | None = None
    time_limit: float | None = None
    soft_time_limit: float | None = None
    ignore_result: bool = False
    task: str | None = None
    shadow: str | None = None
    taskset: str | None = None
    properties: dict[str, Any] | None = None
    stamps: dict[str, Any] | None = None
    stamped_headers: list[str] | None = None
    logfile: str | None = None
    loglevel: int | None = None
    replaced_task_nesting: int = 0
    argsrepr: str | None = None  # as the sender asked the arguments shown (apply_async's argsrepr)
    kwargsrepr: str | None = None
    children: list[Any] = []

    def __init__(self, *args: Any, **fields: Any) -> None:
        """``Context(mapping)`` or ``Context(**fields)``, as Celery's."""
        self.kwargs = {}
        self.children = []
        for mapping in args:
            self.__dict__.update(dict(mapping))
        self.__dict__.update(fields)

    def update(self, *args: Any, **fields: Any) -> None:
        for mapping in args:
            self.__dict__.update(dict(mapping))
        self.__dict__.update(fields)

    def clear(self) -> None:
        """Every field back to its default."""
        self.__dict__.clear()
        self.kwargs = {}
        self.children = []

    def as_execution_options(self) -> dict[str, Any]:
        """The options that send this task again as it was sent (Celery's names)."""
        limit_hard, limit_soft = self.timelimit or (None, None)
        return {
            "task_id": self.id,
            "root_id": self.root_id,
            "parent_id": self.parent_id,
            "group_id": self.group,
            "group_index": self.group_index,
            "shadow": self.shadow,
            "chord": self.chord,
            "chain": self.chain,
            "link": self.callbacks,
            "link_error": self.errbacks,
            "expires": self.expires,
            "soft_time_limit": limit_soft,
            "time_limit": limit_hard,
            "headers": self.headers,
            "retries": self.retries,
            "reply_to": self.reply_to,
            "replaced_task_nesting": self.replaced_task_nesting,
            "origin": self.origin,
        }

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def as_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k) for k in dir(self) if not k.startswith("_") and not callable(getattr(self, k))
        }

    def __repr__(self) -> str:
        return f"<Context: {self.as_dict()!r}>"


class Task:
    """A Celery task. Class attributes are the defaults Celery documents."""

    name: ClassVar[str | None] = None
    typing: ClassVar[bool | None] = None  # None: the app's strict_typing, set as it registers
    max_retries: ClassVar[int | None] = 3
    default_retry_delay: ClassVar[float] = 180
    rate_limit: ClassVar[str | None] = None
    ignore_result: ClassVar[bool | None] = None  # None: the app's task_ignore_result
    trail: ClassVar[bool] = True
    send_events: ClassVar[bool] = True
    store_errors_even_if_ignored: ClassVar[bool] = False
    store_eager_result: ClassVar[bool | None] = None  # None: the app's task_store_eager_result
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
    # Where Celery's worker finds its request class and consumer strategy: names only here
    # (pgtasks' worker has neither; a subclass that sets them changes nothing).
    Request: ClassVar[Any] = "celery.worker.request:Request"
    Strategy: ClassVar[Any] = "celery.worker.strategy:default"
    # Expected exceptions: Celery logs them at INFO without a traceback; so does pgtasks' log.
    throws: ClassVar[tuple[type[BaseException], ...]] = ()
    add_trail: ClassVar[bool] = True
    # Acknowledgement knobs of a broker: pgtasks acknowledges by recording the outcome.
    acks_on_failure: ClassVar[bool | None] = None
    acks_on_timeout: ClassVar[bool | None] = None
    retry_on_worker_lost: ClassVar[bool | None] = None
    # Task attributes that take their default from a setting, as Celery lists them.
    from_config: ClassVar[tuple[tuple[str, str], ...]] = (
        ("serializer", "task_serializer"),
        ("rate_limit", "task_default_rate_limit"),
        ("priority", "task_default_priority"),
        ("track_started", "task_track_started"),
        ("acks_late", "task_acks_late"),
        ("acks_on_failure_or_timeout", "task_acks_on_failure_or_timeout"),
        ("reject_on_worker_lost", "task_reject_on_worker_lost"),
        ("ignore_result", "task_ignore_result"),
        ("store_eager_result", "task_store_eager_result"),
        ("store_errors_even_if_ignored", "task_store_errors_even_if_ignored"),
    )

    _app: Celery | None = None

    # -- identity ------------------------------------------------------------------------
    @property
    def app(self) -> Celery:
        """The app this task belongs to (a shared task: the current app)."""
        if self._app is not None:
            return self._app
        return get_current_app()

    def _get_app(self) -> Celery:
        """:attr:`app` (Celery's accessor behind it, which celery-once and celery-singleton call)."""
        return self.app

    @classmethod
    def overrides_call(cls) -> bool:
        """True when a subclass overrides ``__call__`` (Celery then calls it, not ``run``)."""
        return cls.__call__ is not Task.__call__

    @classmethod
    def on_bound(cls, app: Celery) -> None:
        """Called by Celery when the class is bound to ``app``; a hook for subclasses."""

    def bind(self, app: Celery) -> Task:
        self._app = app
        return self

    def __repr__(self) -> str:
        return f"<@task: {self.name} of {self.app.main}>"

    def __reduce__(self) -> tuple[Any, tuple[str | None, str | None]]:
        """A task pickles as its name (and its module, imported first when it is unpickled):
        the unpickled task is the one the current app has under that name, as in Celery."""
        module = type(self).__module__
        return _unpickle_task, (self.name, module if module in sys.modules else None)

    def __copy__(self) -> Task:
        return self  # a task is its app's one object (not looked up again in the current app)

    def __deepcopy__(self, memo: dict[int, Any]) -> Task:
        return self

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """The body of the task (the decorated function)."""
        raise NotImplementedError("Tasks must define the run method.")

    @property
    def backend(self) -> Any:
        """The app's result backend (the database)."""
        return self.app.backend

    # -- the request -----------------------------------------------------------------------
    @property
    def request(self) -> Context:
        """The current request (``self.request.id``, ``.retries``, ...)."""
        found = request_of(self)
        return found if found is not None else Context()

    @property
    def request_stack(self) -> RequestStack:
        return RequestStack(self)

    def push_request(self, *args: Any, **kwargs: Any) -> None:
        """Make a request current for this task (``Context(*args, **kwargs)``), as unit tests of
        bound tasks do before calling ``task.run(...)``; undo with :meth:`pop_request`."""
        push_request(self, Context(*args, **kwargs))

    def pop_request(self) -> None:
        pop_request(self)

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
            signature = self._run_signature()
            if signature is not None:
                signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{getattr(self.run, '__name__', self.name)}() {exc}") from None

    def _run_signature(self) -> inspect.Signature | None:
        """The body's signature (None: a builtin without one), read once per body: reading it
        costs more than the rest of a send's Python."""
        run = self.run
        cached = self.__dict__.get("_pgtasks_run_signature")
        if cached is not None and cached[0] == run:
            return cast("inspect.Signature | None", cached[1])
        try:
            signature: inspect.Signature | None = inspect.signature(run)
            original = getattr(run, "_pgtasks_around_of", None)
            if original is not None:  # an annotation's wrapper: the arguments are the body's
                signature = inspect.signature(original)
                if not getattr(self, "_decorated", False) or getattr(self, "_bound", False):
                    signature = signature.replace(parameters=list(signature.parameters.values())[1:])
        except ValueError:
            signature = None
        self.__dict__["_pgtasks_run_signature"] = (run, signature)
        return signature

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
        check_call(self, args, kwargs)
        shadow = shadow or self.shadow_name(args, kwargs, options)
        if shadow:  # the name logs and monitoring show for this call (Celery's shadow)
            options["shadow"] = shadow
        if flag("task_always_eager", self.app.conf.task_always_eager):
            check_eager_serializer(options, self)
            with joins_allowed(False):  # as Celery's: the eager task may not wait for results
                return self.apply(
                    args,
                    kwargs,
                    task_id=task_id or new_task_id(),
                    link=link,
                    link_error=link_error,
                    **options,
                )
        return send_for_task(self, args, kwargs, task_id, link, link_error, options)

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
        return await send_for_task_async(self, args, kwargs, task_id, link, link_error, options)

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
        """Run the task here, now, and return an EagerResult (retries run at once). The app
        runs it (``app.apply_eagerly``): running a task is above the Task class."""
        return self.app.apply_eagerly(
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
        """Retry the task: raises :class:`~celery.exceptions.Retry` (with ``throw=False``, once
        the body returns); a durable retry in a worker, at once in eager mode (see
        :mod:`pgtasks.compat.bridge.retries`)."""
        return request_retry(self, args, kwargs, exc, throw, eta, countdown, max_retries, options)

    def AsyncResult(self, task_id: str, **kwargs: Any) -> AsyncResult:
        return self.app.AsyncResult(task_id, task_name=self.name, **kwargs)

    def update_state(
        self, task_id: str | None = None, state: str | None = None, meta: Any = None, **kwargs: Any
    ) -> None:
        """Record a custom state (``PROGRESS`` with ``meta={...}``): readers of the task's
        AsyncResult see it, and its meta as ``info``, until the task ends. Eagerly: kept on
        the request. The state of another task (``task_id``, from any process, as Celery's
        backend stores it) is recorded for that task if it has been sent (a warning if not)."""
        request = self.request
        local = request.is_eager or request.called_directly
        task_id = task_id or request.id
        if task_id is None:  # called directly, or outside any task: no id to store it for
            if not self.app.conf.result_backend:
                return  # as Celery's disabled backend: a task's unit test calls it directly
            raise ValueError(f"update_state() of {self.name!r} needs a task_id: no task of it runs here")
        if local and task_id == request.id:
            request.update(custom_state=state, custom_meta=meta)
            return
        if local:  # another task's state, from outside it
            try:
                record_task_state(self.app.engine, task_id, state or states.PENDING, meta)
            except ConfigurationError:  # a row made now would take the id its task is sent with
                log.warning("update_state(task_id=%r): no task has this id yet; state not stored", task_id)
            return
        record_task_state(self.app.engine, task_id, state or states.PENDING, meta)
        mirror = running_task_mirror(self)
        if mirror is not None:  # django-celery-results' row, after pgtasks recorded the state
            mirror.custom_state(request, task_id, state or states.PENDING, meta)

    def shadow_name(self, args: Any, kwargs: Any, options: Any) -> str | None:
        """Celery's hook for a display name other than the task's; None keeps the name."""
        return None

    def send_event(self, type_: str, retry: bool = True, retry_policy: Any = None, **fields: Any) -> None:
        """Celery events are not emitted by pgtasks: accepted and ignored."""

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

    def signature_from_request(
        self,
        request: Context | None = None,
        args: Any = None,
        kwargs: Any = None,
        queue: str | None = None,
        **extra_options: Any,
    ) -> Signature:
        """A signature that sends this task again as ``request`` (default: the current one)
        was sent: its arguments, id, limits, headers and queue."""
        request = self.request if request is None else request
        options = {k: v for k, v in request.as_execution_options().items() if v not in (None, 0)}
        delivery = request.delivery_info or {}
        if delivery.get("priority") is not None:
            options["priority"] = delivery["priority"]
        if queue or delivery.get("routing_key"):
            options["queue"] = queue or delivery["routing_key"]
        options.update(extra_options)
        return self.signature(
            request.args if args is None else args, request.kwargs if kwargs is None else kwargs, options
        )

    subtask_from_request = signature_from_request

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
        return replace_running_task(self, sig)

    def add_to_chord(self, sig: Any, lazy: bool = False) -> Any:
        """Add ``sig`` to the chord this running task is a header task of: the body waits for
        it too and gets its result after the others'. ValueError if the task is in no chord.
        ``lazy=True`` (Celery: return the signature for the caller to send) is refused: the
        task is inserted with the header's new count in one transaction."""
        if lazy:
            raise NotImplementedError(
                "add_to_chord(lazy=True) is not supported by pgtasks: the task is sent with the "
                "chord's new count in one transaction; call add_to_chord(sig)"
            )
        return add_to_running_chord(self, sig)

    # -- what Celery's worker and annotations do to a task ----------------------------------
    def annotate(self) -> None:
        """Apply the app's ``task_annotations`` to this task's class (the app does it when it
        is finalized, and for a task registered later): each attribute set, each ``@name``
        method wrapped."""
        cls = type(self)
        for found in resolve_all(self.app.annotations, self):
            for key, value in found.items():
                if key.startswith("@"):
                    cls.add_around(key[1:], value)
                else:
                    setattr(cls, key, value)

    @classmethod
    def add_around(cls, attr: str, around: Any) -> None:
        """Set the method ``attr`` to ``around(original)`` (what Celery's annotations do with
        ``@name`` keys); applied again, it wraps the original, not the wrapper."""
        original = getattr(cls, attr)
        original = getattr(original, "_pgtasks_around_of", None) or original
        method = around(original)
        method._pgtasks_around_of = original  # not __wrapped__: signature() would follow it
        setattr(cls, attr, method)

    def start_strategy(self, app: Any, consumer: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "start_strategy belongs to Celery's worker consumer, which pgtasks does not have; "
            "`pgtasks worker` claims tasks from the database"
        )

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


def _unpickle_task(name: str, module: str | None) -> Task:
    """The task named ``name`` of the current app, once ``module`` (its tasks) is imported."""
    if module:
        importlib.import_module(module)
    return cast(Task, get_current_app().tasks[name])
