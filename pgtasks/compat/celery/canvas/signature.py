"""Celery's ``celery.canvas.Signature``: one task call to send later, and the functions that
make one (:func:`signature`, :func:`maybe_signature`).

A :class:`Signature` is a dict (as in Celery: ``task``, ``args``, ``kwargs``, ``options``,
``subtask_type``, ``immutable``) that names one task call: ``.s`` / ``.si`` / ``.set`` /
``.clone`` / ``.delay`` / ``.apply_async`` / ``.apply`` / calling it, ``link`` and
``link_error``. The workflow types (chain.py, group.py, chord.py, mapping.py) are signatures
too: each registers under its Celery task name (``celery.chain``, ...) in Celery's
``Signature.TYPES``, so ``a | b`` makes a chain and a workflow that travelled as a plain dict
becomes that workflow again, and this module imports none of them.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable, Mapping, MutableSequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from pgtasks.compat.celery._state import get_current_app
from pgtasks.compat.celery.canvas.reprs import call_repr
from pgtasks.compat.celery.canvas.stamping import StampingVisitor, stamp_headers
from pgtasks.compat.celery.utils.functional import maybe_list
from pgtasks.engine.ids import new_task_id

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.result import async_result

__all__ = ["Signature", "maybe_signature", "signature", "subtask", "takes_request", "workflow_type"]

_Type = TypeVar("_Type", bound="type[Signature]")


class Signature(dict):  # type: ignore[type-arg]
    """One task call, to be sent later: ``add.s(2, 2)``, ``signature('tasks.add', (2, 2))``."""

    # Signature types by name (Celery's registry, filled by ``register_type``); pgtasks'
    # workflow types register under their Celery task names (``celery.chain``, ...).
    TYPES: ClassVar[dict[str, type[Signature]]] = {}

    @classmethod
    def register_type(cls, name: str | None = None) -> Callable[[_Type], _Type]:
        """A class decorator registering a signature subclass under ``name`` (its class name)."""

        def register(subclass: _Type) -> _Type:
            cls.TYPES[name or subclass.__name__] = subclass
            return subclass

        return register

    @classmethod
    def from_parts(cls, parts: list[Any], app: Celery | None, options: dict[str, Any]) -> Signature | None:
        """The workflow of this type made of ``parts`` (its members, as signatures); None for a
        type that is not a workflow."""
        return None

    @classmethod
    def rebuild(cls, d: dict[str, Any], app: Celery | None) -> Signature | None:
        """The signature of this type the dict ``d`` describes (a workflow: from its
        ``kwargs["tasks"]``), or None to leave it a plain Signature."""
        kwargs = d.get("kwargs")
        tasks = kwargs.get("tasks") if isinstance(kwargs, dict) else None
        if not isinstance(tasks, list):
            return None
        return cls.from_parts([maybe_signature(t, app=app) for t in tasks], app, dict(d.get("options") or {}))

    @classmethod
    def from_dict(cls, d: dict[str, Any], app: Any = None) -> Signature:
        """The signature (or workflow) a dict describes, as it travels in messages."""
        return signature(dict(d), app=app)

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
            args=_args_of(name, args),
            kwargs=_kwargs_of(name, kwargs),
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
        return get_current_app()

    @property
    def type(self) -> Any:
        """The task object (looked up by name in the app when the signature was built from one)."""
        if self._type is None:
            self._type = self.app.tasks[self.name]
        return self._type

    @property
    def AsyncResult(self) -> Any:
        """The result class of the signature's task (the app's AsyncResult)."""
        return self.app.AsyncResult

    @property
    def parent_id(self) -> str | None:
        return self.options.get("parent_id")

    @property
    def root_id(self) -> str | None:
        return self.options.get("root_id")

    @property
    def subtask_type(self) -> str | None:
        kind = self.get("subtask_type")
        return None if kind is None else str(kind)

    def __repr__(self) -> str:
        """As Celery prints it: ``proj.add(2, 2)`` (workflows: see canvas/reprs.py)."""
        return call_repr(self.name, self.args, self.kwargs)

    def reprcall(self, *args: Any, **kwargs: Any) -> str:
        """``name(args, kwargs)`` as the call would be made with these extra arguments (given
        to an immutable signature too, as Celery prints them)."""
        return call_repr(self.name, tuple(args) + self.args, {**self.kwargs, **kwargs})

    # -- building ------------------------------------------------------------------------
    def _merge(self, args: Any = None, kwargs: Any = None, options: Any = None) -> tuple[Any, ...]:
        """Celery's partial application: new args go first; immutable signatures keep theirs."""
        options = dict(options or {})
        if self.immutable:
            return self.args, self.kwargs, {**self.options, **options}
        merged_args = _args_of(self.name, args) + self.args if args else self.args
        merged_kwargs = {**self.kwargs, **_kwargs_of(self.name, kwargs)} if kwargs else self.kwargs
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

    def replace(self, args: Any = None, kwargs: Any = None, options: Any = None) -> Signature:
        """A copy with ``args``, ``kwargs`` or ``options`` replaced (not merged)."""
        copy = self.clone()
        if args is not None:
            copy.args = args
        if kwargs is not None:
            copy.kwargs = kwargs
        if options is not None:
            copy.options = options
        return copy

    def append_to_list_option(self, key: str, value: Any) -> Any:
        """Add ``value`` to the list option ``key`` (made a list if it was not) once."""
        items = self._list_option(key)
        if value not in items:
            items.append(value)
        return value

    def extend_list_option(self, key: str, value: Any) -> None:
        """Add every item of ``value`` to the list option ``key``."""
        self._list_option(key).extend(maybe_list(value) or ())

    def _list_option(self, key: str) -> MutableSequence[Any]:
        items: MutableSequence[Any] = self.options.setdefault(key, [])
        if not isinstance(items, MutableSequence):
            items = self.options[key] = [items]
        return items

    def freeze(self, _id: str | None = None, **kwargs: Any) -> async_result.AsyncResult:
        """Fix the task id now and return its AsyncResult."""
        task_id = _id or self.options.get("task_id") or new_task_id()
        self.options["task_id"] = task_id
        return self.app.AsyncResult(task_id, task_name=self.name)

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the task here, directly; the arguments given here go first, unless the
        signature is immutable (as Celery: an immutable errback gets none of ``request, exc,
        traceback``)."""
        merged_args, merged_kwargs, _ = self._merge(args, kwargs)
        return self.type(*merged_args, **merged_kwargs)

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
    def __invert__(self) -> Any:
        """``~sig``: send it and wait for its result (Celery's shortcut for
        ``sig.apply_async().get()``)."""
        return self.apply_async().get()

    def __or__(self, other: Any) -> Any:
        """``a | b``: a chain (TypeError for anything but a signature, as in Celery)."""
        if not isinstance(other, dict):
            return NotImplemented
        return workflow_type("celery.chain")(self, other)

    def link(self, callback: Any) -> Any:
        """Run ``callback`` with this task's result when it succeeds; returns ``callback``."""
        self.options.setdefault("link", []).append(callback)
        return callback

    def link_error(self, errback: Any) -> Any:
        """Run ``errback`` when this task fails (linked once); returns ``errback``."""
        return self.append_to_list_option("link_error", errback)

    def on_error(self, errback: Any) -> Any:
        """:meth:`link_error` that returns this signature, so calls can be chained:
        ``add.s(2, 2).on_error(handle.s()).delay()`` sends ``add``."""
        self.link_error(errback)
        return self

    def flatten_links(self) -> list[Any]:
        """This signature and every callback linked below it, depth first."""
        found: list[Any] = [self]
        for link in maybe_list(self.options.get("link")) or ():
            found.extend(maybe_signature(link, app=None).flatten_links())
        return found

    def election(self) -> Any:
        raise NotImplementedError(
            "Signature.election is not supported by pgtasks: send it with apply_async()"
        )

    def stamp(self, visitor: Any = None, append_stamps: bool = False, **headers: Any) -> Any:
        """Stamp this signature (see stamping.py): ``headers`` and what ``visitor.on_signature``
        returns become options listed in ``stamped_headers``, sent as the task's stamps. Its
        callbacks and errbacks are stamped first, as Celery does (:meth:`stamp_links`)."""
        stamp_links(self, visitor, append_stamps, dict(headers))
        visited = (visitor.on_signature(self, **headers) or {}) if visitor is not None else None
        return self.set(**stamp_headers(self, visited, append_stamps, headers))

    def stamp_links(self, visitor: Any, append_stamps: bool = False, **headers: Any) -> None:
        """Stamp this signature's callbacks and errbacks (not the signature itself)."""
        stamp_links(self, visitor, append_stamps, headers)

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
    """The Signature (or chain, group, chord, map, starmap, chunks) a plain dict describes,
    pgtasks' or Celery's (the registered type of its task name rebuilds it)."""
    name = d.get("task")
    kind = Signature.TYPES.get(name) if isinstance(name, str) else None
    rebuilt = kind.rebuild(d, app) if kind is not None else None
    return rebuilt if rebuilt is not None else Signature(d, app=app)


def workflow_type(name: str) -> Any:
    """The workflow class registered under ``name`` (``celery.chain``, ``celery.group``, ...)."""
    try:
        return Signature.TYPES[name]
    except KeyError:
        raise RuntimeError(f"{name} is not defined: import pgtasks.compat.celery.canvas") from None


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
    """Celery's test for an errback called with ``(request, exc, traceback)`` in the failing
    worker: a task made by the decorator, not bound (``bind=True``), whose function takes
    more than one positional argument. Any other (a bound or class-based task, an unknown
    one) is sent as a task with the failed task's id."""
    if not isinstance(errback, Signature) or errback.name not in errback.app.tasks:
        return False
    task = errback.app.tasks[errback.name]
    function = getattr(task, "__wrapped__", None)
    if not getattr(task, "_decorated", False) or getattr(task, "_bound", False) or function is None:
        return False
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) > 1 or any(p.kind is p.VAR_POSITIONAL for p in params)


def stamp_links(
    sig: Signature, visitor: StampingVisitor | None, append: bool, headers: dict[str, Any]
) -> None:
    """Stamp ``sig``'s callbacks and errbacks (rebuilt in place when they are dicts) with the
    headers and the visitor's ``on_callback`` / ``on_errback``."""
    for option, hook in (("link", "on_callback"), ("link_error", "on_errback")):
        given = sig.options.get(option)
        if not given:
            continue
        links = [maybe_signature(link, app=sig._app) for link in maybe_list(given) or ()]
        for link in links:
            visited = (getattr(visitor, hook)(link, **headers) or {}) if visitor is not None else None
            link.stamp(
                visitor, append, **stamp_headers(link, visited, append, copy.deepcopy(headers), own=False)
            )
        sig.options[option] = links


def _args_of(name: str, args: Any) -> tuple[Any, ...]:
    """A signature's positional arguments: any iterable but a string (read one argument a
    letter) or a mapping; TypeError naming the task for anything else."""
    if not args:
        return ()
    if isinstance(args, (str, bytes, Mapping)) or not isinstance(args, Iterable):
        raise TypeError(f"args of signature {name!r} must be a list or tuple, not {type(args).__name__}")
    return tuple(args)


def _kwargs_of(name: str, kwargs: Any) -> dict[str, Any]:
    """A signature's keyword arguments: a dict, or what ``dict()`` takes (pairs), as Celery."""
    if not kwargs:
        return {}
    try:
        return dict(kwargs)
    except (TypeError, ValueError):
        raise TypeError(f"kwargs of signature {name!r} must be a dict, not {type(kwargs).__name__}") from None
