"""``celery.canvas``: task signatures and the workflows built from them.

A :class:`Signature` is a dict (as in Celery: ``task``, ``args``, ``kwargs``, ``options``,
``subtask_type``, ``immutable``) that names one task call: ``.s`` / ``.si`` / ``.set`` /
``.clone`` / ``.delay`` / ``.apply_async`` / ``.apply`` / calling it. Workflows are
signatures too: ``chain`` (or ``a | b``), ``group``, ``chord``, ``chunks``, ``xmap``,
``xstarmap``. Sending one goes through its app (``app.send_canvas``), which plans it into
linked tasks (see planning.py) and inserts them in one transaction.
"""

from __future__ import annotations

import copy
import inspect
import uuid
from typing import TYPE_CHECKING, Any, overload

from pgtasks.compat.current import current_app
from pgtasks.compat.result import GroupResult

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery
    from pgtasks.compat.result import AsyncResult

__all__ = [
    "Signature",
    "chain",
    "chord",
    "chunks",
    "group",
    "maybe_signature",
    "signature",
    "subtask",
    "xmap",
    "xstarmap",
]


class Signature(dict):  # type: ignore[type-arg]
    """One task call, to be sent later: ``add.s(2, 2)``, ``signature('tasks.add', (2, 2))``."""

    def __init__(
        self,
        task: Any = None,
        args: Any = None,
        kwargs: Any = None,
        options: Any = None,
        type: Any = None,
        subtask_type: str | None = None,
        immutable: bool = False,
        app: Celery | None = None,
        **ex: Any,
    ) -> None:
        self._type = type
        self._app = app
        if isinstance(task, dict):
            super().__init__(task)
            return
        name = task if isinstance(task, str) else getattr(task, "name", None)
        if not isinstance(name, str):
            raise TypeError(f"a signature needs a task or a task name, not {task!r}")
        if not isinstance(task, str):
            self._type = task
        super().__init__(
            task=name,
            args=tuple(args or ()),
            kwargs=dict(kwargs or {}),
            options={**dict(options or {}), **ex},
            subtask_type=subtask_type,
            immutable=immutable,
            chord_size=None,
        )

    # -- fields --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return str(self["task"])

    task = name

    @property
    def args(self) -> tuple[Any, ...]:
        return tuple(self.get("args") or ())

    @args.setter
    def args(self, value: Any) -> None:
        self["args"] = tuple(value or ())

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.get("kwargs") or {})

    @kwargs.setter
    def kwargs(self, value: Any) -> None:
        self["kwargs"] = dict(value or {})

    @property
    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = self.setdefault("options", {})
        return options

    @options.setter
    def options(self, value: Any) -> None:
        self["options"] = dict(value or {})

    @property
    def immutable(self) -> bool:
        return bool(self.get("immutable"))

    @property
    def id(self) -> str | None:
        return self.options.get("task_id")

    @property
    def app(self) -> Celery:
        if self._app is not None:
            return self._app
        task = self._type
        if task is not None:
            app: Celery = task.app  # the task object: any object with .name and .app
            return app
        return current_app()

    @property
    def type(self) -> Any:
        """The task object (looked up by name in the app when the signature was built from one)."""
        if self._type is None:
            self._type = self.app.tasks[self.name]
        return self._type

    def __repr__(self) -> str:
        args = ", ".join([*(repr(a) for a in self.args), *(f"{k}={v!r}" for k, v in self.kwargs.items())])
        return f"{self.name}({args}){'!' if self.immutable else ''}"

    # -- building ------------------------------------------------------------------------
    def _merge(self, args: Any = None, kwargs: Any = None, options: Any = None) -> tuple[Any, ...]:
        """Celery's partial application: new args go first; immutable signatures keep theirs."""
        options = dict(options or {})
        if self.immutable:
            return self.args, self.kwargs, {**self.options, **options}
        merged_args = tuple(args) + self.args if args else self.args
        merged_kwargs = {**self.kwargs, **kwargs} if kwargs else self.kwargs
        return merged_args, merged_kwargs, {**self.options, **options}

    def clone(self, args: Any = None, kwargs: Any = None, **opts: Any) -> Signature:
        """A copy, with ``args`` prepended and ``kwargs``/options merged (unless immutable)."""
        merged_args, merged_kwargs, options = self._merge(args, kwargs, opts)
        sig = Signature(
            self.name,
            merged_args,
            merged_kwargs,
            copy.deepcopy(options),
            type=self._type,
            subtask_type=self.get("subtask_type"),
            immutable=self.immutable,
            app=self._app,
        )
        return sig

    partial = clone

    def set(self, immutable: bool | None = None, **options: Any) -> Signature:
        """Set options (queue, countdown, ...) on this signature; returns it."""
        if immutable is not None:
            self["immutable"] = immutable
        self.options.update(options)
        return self

    def set_immutable(self, immutable: bool) -> None:
        self["immutable"] = immutable

    def freeze(self, _id: str | None = None, **kwargs: Any) -> AsyncResult:
        """Fix the task id now and return its AsyncResult."""
        task_id = _id or self.options.get("task_id") or str(uuid.uuid4())
        self.options["task_id"] = task_id
        return self.app.AsyncResult(task_id, task_name=self.name)

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the task here, directly (as in Celery, the arguments given here go first even
        when the signature is immutable: how an errback gets ``request, exc, traceback``)."""
        merged_args = (*args, *self.args)
        return self.type(*merged_args, **{**self.kwargs, **kwargs})

    def delay(self, *args: Any, **kwargs: Any) -> Any:
        """``apply_async(args, kwargs)``: an AsyncResult (a GroupResult for a group)."""
        return self.apply_async(args, kwargs)

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        """Send the task with the signature's arguments and options (arguments given here are
        prepended, options override)."""
        merged_args, merged_kwargs, merged_options = self._merge(args, kwargs, options)
        task = self._type
        if task is None and self.name in self.app.tasks:
            task = self.app.tasks[self.name]
        if task is not None:
            return task.apply_async(merged_args, merged_kwargs, **merged_options)
        return self.app.send_task(self.name, merged_args, merged_kwargs, **merged_options)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        """Run the task here (an EagerResult)."""
        merged_args, merged_kwargs, merged_options = self._merge(args, kwargs, options)
        return self.type.apply(merged_args, merged_kwargs, **merged_options)

    # -- workflows --------------------------------------------------------------------
    def __or__(self, other: Any) -> Any:
        return chain(self, other)

    def link(self, callback: Any) -> Any:
        """Run ``callback`` with this task's result when it succeeds; returns ``callback``."""
        self.options.setdefault("link", []).append(callback)
        return callback

    def link_error(self, errback: Any) -> Any:
        """Run ``errback`` with this task's id when it fails; returns ``errback``."""
        self.options.setdefault("link_error", []).append(errback)
        return errback

    def __deepcopy__(self, memo: dict[int, Any]) -> Signature:
        return Signature(dict(copy.deepcopy(dict(self), memo)), type=self._type, app=self._app)

    def __reduce__(self) -> tuple[Any, ...]:
        return signature, (dict(self),)


def signature(varies: Any, *args: Any, **kwargs: Any) -> Signature:
    """A Signature from a task, a task name or a signature dict (a workflow's dict, as it
    travels inside arguments or links, becomes that workflow again)."""
    app = kwargs.get("app")
    if isinstance(varies, dict):
        if isinstance(varies, Signature):
            return varies.clone()
        return _from_dict(varies, app)
    return Signature(varies, *args, **kwargs)


def _from_dict(d: dict[str, Any], app: Celery | None) -> Signature:
    """The Signature (or chain, group, chord) a plain dict describes."""
    name, options = d.get("task"), dict(d.get("options") or {})
    tasks = (d.get("kwargs") or {}).get("tasks") if isinstance(d.get("kwargs"), dict) else None
    if name in _WORKFLOWS and isinstance(tasks, list):
        parts = [maybe_signature(t, app=app) for t in tasks]
        if name == "celery.chord":
            return chord(parts[0], parts[1] if len(parts) > 1 else None, app=app, **options)
        return _WORKFLOWS[name](*parts, app=app, **options)  # type: ignore[no-any-return]
    return Signature(d, app=app)


subtask = signature


@overload
def maybe_signature(d: None, app: Celery | None = None, clone: bool = False) -> None: ...
@overload
def maybe_signature(d: dict[str, Any], app: Celery | None = None, clone: bool = False) -> Signature: ...
@overload
def maybe_signature(d: Any, app: Celery | None = None, clone: bool = False) -> Any: ...


def maybe_signature(d: Any, app: Celery | None = None, clone: bool = False) -> Any:
    """``d`` as a Signature when it is a dict (a copy with ``clone``); anything else as it is."""
    if d is None:
        return None
    if isinstance(d, Signature):
        return d.clone() if clone else d
    if isinstance(d, dict):
        return _from_dict(d, app)
    return d


def takes_request(errback: Any) -> bool:
    """Celery's test for a new-style errback: its function takes more than one positional
    argument (``request, exc, traceback``). Unknown tasks are old-style (sent with the id)."""
    if not isinstance(errback, Signature) or errback.name not in errback.app.tasks:
        return False
    run = errback.app.tasks[errback.name].run
    try:
        params = inspect.signature(run).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) > 1 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _members_link(members: list[Any], sig: Any, error: bool) -> Any:
    """Link ``sig`` (an immutable copy, as Celery does) to each of ``members``."""
    for member in members:
        copy = maybe_signature(sig).clone()
        copy.set(immutable=True)
        member.link_error(copy) if error else member.link(copy)
    return sig


class _Workflow(Signature):
    """What every workflow shares with a signature: options, ``|``, calling and sending."""

    _lazy: Any = None  # a chord's header while it is still a generator

    def __init__(self, name: str, tasks: list[Any], app: Celery | None = None, **options: Any) -> None:
        super().__init__(name, (), {}, options, app=app)
        self["kwargs"] = {"tasks": tasks}

    @property
    def tasks(self) -> list[Any]:
        return list(self["kwargs"]["tasks"])

    def _signatures(self) -> list[Any]:
        """The members as signatures (a member that arrived as a dict is rebuilt in place)."""
        members = [maybe_signature(t, app=self._app) for t in self["kwargs"]["tasks"]]
        self["kwargs"]["tasks"] = members
        return members

    @property
    def app(self) -> Celery:
        if self._app is not None:
            return self._app
        for task in self.tasks:
            found = getattr(task, "app", None) if not isinstance(task, dict) else None
            if found is not None:
                return found  # type: ignore[no-any-return]
        return Signature.app.fget(self)  # type: ignore[attr-defined,no-any-return]

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        for callback in _as_list(options.pop("link", None)):
            self.link(callback)
        for errback in _as_list(options.pop("link_error", None)):
            self.link_error(errback)
        if options:
            self.options.update(options)
        if self.app.conf.task_always_eager:
            return self.apply(args)
        return self.app.send_canvas(self, tuple(args or ()))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.apply_async(args)

    def __or__(self, other: Any) -> Any:
        return chain(self, other)

    def clone(self, args: Any = None, kwargs: Any = None, **opts: Any) -> Any:
        copy = type(self).__new__(type(self))
        dict.__init__(copy, self)
        copy._type, copy._app = self._type, self._app
        if self._lazy is not None:  # a generator header goes with the copy
            copy._lazy, self._lazy = self._lazy, None
        copy["options"] = {**self.options, **opts}
        return copy


class chain(_Workflow):
    """Tasks one after the other, each result passed to the next: ``chain(a.s(1), b.s())``
    or ``a.s(1) | b.s()``."""

    def __init__(self, *tasks: Any, app: Celery | None = None, **options: Any) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], dict) and hasattr(tasks[0], "__iter__"):
            tasks = tuple(tasks[0])  # a list, tuple or generator of signatures
        flat: list[Any] = []
        for task in tasks:  # chain(chain(a, b), c) is chain(a, b, c)
            flat.extend(task.tasks if isinstance(task, chain) else [task])
        super().__init__("celery.chain", flat, app, **options)

    def link(self, callback: Any) -> Any:
        """Run ``callback`` with the chain's result: linked to its last task."""
        members = self._signatures()
        return members[-1].link(callback) if members else super().link(callback)

    def link_error(self, errback: Any) -> Any:
        """Run ``errback`` once when any task of the chain fails. A failure ends every task
        after it with the same error, so an errback sent as a task (with a task id) is linked
        to the last task; one called in the failing worker is linked to every task."""
        members = self._signatures()
        if not members:
            return super().link_error(errback)
        if takes_request(maybe_signature(errback, app=self._app)):
            for member in members:
                member.link_error(errback)
            return errback
        return members[-1].link_error(errback)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        """Run the chain here, each task after the other (eager mode)."""
        result = None
        previous: tuple[Any, ...] = tuple(args or ())
        for task in self.tasks:
            result = (
                task.apply(previous) if isinstance(task, _Workflow) else maybe_signature(task).apply(previous)
            )
            if result.state != "SUCCESS":
                return result
            previous = (result.get(),)
        return result


class group(_Workflow):
    """Tasks sent together: ``group(add.s(i, i) for i in range(10))`` -> GroupResult."""

    def __init__(self, *tasks: Any, app: Celery | None = None, **options: Any) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], dict) and hasattr(tasks[0], "__iter__"):
            tasks = tuple(tasks[0])
        super().__init__("celery.group", list(tasks), app, **options)

    def link(self, callback: Any) -> Any:
        """As Celery: ``callback`` (immutable: no result is passed) linked to the first task."""
        members = self._signatures()
        return _members_link(members[:1], callback, False) if members else super().link(callback)

    def link_error(self, errback: Any) -> Any:
        """As Celery: ``errback`` (an immutable copy) linked to every task of the group."""
        members = self._signatures()
        return _members_link(members, errback, True) if members else super().link_error(errback)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        results: list[Any] = []
        for member in self.tasks:
            result = maybe_signature(member).apply(args)
            results.extend(result.results if isinstance(result, GroupResult) else [result])
        return GroupResult(str(uuid.uuid4()), results, app=self.app)

    def __or__(self, other: Any) -> Any:
        return chord(self, other) if not isinstance(other, group) else chain(self, other)


class chord(_Workflow):
    """A group whose results go, as one list, to a body: ``chord(header)(body)``."""

    def __init__(self, header: Any, body: Any = None, app: Celery | None = None, **options: Any) -> None:
        # A generator header is kept as it is: sending the chord consumes it task by task,
        # as Celery does (planning.py); anything else that reads the header unrolls it.
        self._lazy = header if not isinstance(header, dict) and hasattr(header, "__next__") else None
        if self._lazy is None:
            header = header if isinstance(header, group) else group(header, app=app)
        super().__init__("celery.chord", [group([], app=app) if self._lazy else header, body], app, **options)

    @property
    def header(self) -> group:
        lazy = self._lazy
        if lazy is not None:  # read before it was sent: unrolled now
            self._lazy = None
            self["kwargs"]["tasks"][0] = group(list(lazy), app=self._app)
        return self.tasks[0]  # type: ignore[no-any-return]

    def take_lazy_header(self) -> Any:
        """The generator this chord's header still is (once), or None."""
        lazy, self._lazy = self._lazy, None
        return lazy

    @property
    def body(self) -> Any:
        return self.tasks[1]

    def link(self, callback: Any) -> Any:
        """``callback`` runs with the body's result."""
        body = self._body_signature()
        return body.link(callback) if body is not None else super().link(callback)

    def link_error(self, errback: Any) -> Any:
        """``errback`` runs when the body fails, or a header task does (the body then fails
        with ChordError); one called in the failing worker is linked to the header tasks too."""
        body = self._body_signature()
        if body is None:
            return super().link_error(errback)
        if takes_request(maybe_signature(errback, app=self._app)):
            _members_link(self.header._signatures(), errback, True)
        return body.link_error(errback)

    def _body_signature(self) -> Any:
        if self.body is None:
            return None
        body = maybe_signature(self.body, app=self._app)
        self["kwargs"]["tasks"][1] = body
        return body

    def __call__(self, body: Any = None, **options: Any) -> Any:
        if body is not None:
            return chord(self.header, body, app=self._app).apply_async(**options)
        return self.apply_async(**options)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        results = self.header.apply(args)
        if self.body is None:  # no body: the header's results, as when sent (planning.py)
            return results
        values = [r.get() for r in results.results]
        return maybe_signature(self.body).apply((values,))


_WORKFLOWS: dict[str, Any] = {"celery.chain": chain, "celery.group": group, "celery.chord": chord}


class _Delegating(_Workflow):
    """A workflow sent as another one (``_delegate``)."""

    def _delegate(self) -> Any:
        raise NotImplementedError

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        return self._delegate().apply_async(**options)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        return self._delegate().apply()


class xmap(_Delegating):
    """One task that calls ``task`` on each item, in one worker: ``add.map([1, 2])``."""

    def __init__(self, task: Any, it: Any, app: Celery | None = None, **options: Any) -> None:
        super().__init__("celery.map", [maybe_signature(task)], app, **options)
        self["args"] = (maybe_signature(task).name, list(it))

    def _as_signature(self) -> Signature:
        return Signature(self["task"], self["args"], {}, dict(self.options), app=self.app)

    _delegate = _as_signature


class xstarmap(xmap):
    """Like ``xmap`` with each item unpacked as arguments: ``add.starmap([(1, 2), (3, 4)])``."""

    def __init__(self, task: Any, it: Any, app: Celery | None = None, **options: Any) -> None:
        super().__init__(task, [list(item) for item in it], app, **options)
        self["task"] = "celery.starmap"


class chunks(_Delegating):
    """``task`` over ``it`` in chunks of ``n`` items: a group of ``xstarmap`` tasks."""

    def __init__(self, task: Any, it: Any, n: int, app: Celery | None = None, **options: Any) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"chunks needs a chunk size >= 1, not {n!r}")
        items = [list(item) for item in it]
        parts = [items[i : i + n] for i in range(0, len(items), n)]
        super().__init__("celery.chunks", [xstarmap(task, part, app=app) for part in parts], app, **options)

    def group(self) -> group:
        return group([part._as_signature() for part in self.tasks], app=self._app)

    def _delegate(self) -> Any:
        return self.group()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
