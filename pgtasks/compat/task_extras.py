"""The rest of Celery's ``celery.app.task.Task`` API (a mixin of :class:`pgtasks.compat.task.Task`):
the request stack unit tests push onto, signatures rebuilt from a request, and the attributes
and hooks Celery's worker reads, with what each does here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pgtasks.compat.request import Context, pop_request, push_request, requests_of

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery
    from pgtasks.compat.signatures import Signature


class RequestStack:
    """Celery's ``task.request_stack``: the requests pushed for one task on this thread."""

    def __init__(self, task: Any) -> None:
        self._task = task

    def push(self, request: Context) -> None:
        push_request(self._task, request)

    def pop(self) -> Context | None:
        return pop_request(self._task)

    @property
    def top(self) -> Context | None:
        found = requests_of(self._task)
        return found[-1] if found else None

    @property
    def stack(self) -> list[Context]:
        return requests_of(self._task)

    def __len__(self) -> int:
        return len(self.stack)


class TaskExtras:
    """Mixed into the Celery Task."""

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

    if TYPE_CHECKING:  # provided by the Task class

        @property
        def app(self) -> Celery: ...

        @property
        def request(self) -> Context: ...

    @classmethod
    def on_bound(cls, app: Celery) -> None:
        """Called by Celery when the class is bound to ``app``; a hook for subclasses."""

    @property
    def request_stack(self) -> RequestStack:
        return RequestStack(self)

    def push_request(self, *args: Any, **kwargs: Any) -> None:
        """Make a request current for this task (``Context(*args, **kwargs)``), as unit tests of
        bound tasks do before calling ``task.run(...)``; undo with :meth:`pop_request`."""
        push_request(self, Context(*args, **kwargs))

    def pop_request(self) -> None:
        pop_request(self)

    @property
    def backend(self) -> Any:
        """The app's result backend (the database)."""
        return self.app.backend

    def shadow_name(self, args: Any, kwargs: Any, options: Any) -> str | None:
        """Celery's hook for a display name other than the task's; None keeps the name."""
        return None

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
        signature: Signature = self.signature(  # type: ignore[attr-defined]
            request.args if args is None else args, request.kwargs if kwargs is None else kwargs, options
        )
        return signature

    subtask_from_request = signature_from_request

    def add_to_chord(self, sig: Any, lazy: bool = False) -> Any:
        raise NotImplementedError(
            "add_to_chord is not supported by pgtasks: a chord's header is fixed when it is sent; "
            "send the extra work as a group (or a chord) of its own"
        )

    def annotate(self) -> None:
        """Celery applies ``task_annotations`` here; pgtasks does not read them (celery-check
        says so): set the options on the task itself."""

    def add_around(self, attr: str, around: Any) -> None:
        """Wrap the method ``attr`` with ``around(original, *args, **kwargs)`` (what Celery's
        annotations do to task methods)."""
        original = getattr(self, attr)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return around(original, *args, **kwargs)

        setattr(self, attr, wrapped)

    def start_strategy(self, app: Any, consumer: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "start_strategy belongs to Celery's worker consumer, which pgtasks does not have; "
            "`pgtasks worker` claims tasks from the database"
        )
