"""Celery's canvas on the engine's links: ``chain``, ``group``, ``chord``, ``chunks``,
``xmap``, ``xstarmap`` and the ``link``/``link_error`` callbacks of a signature.

A workflow is planned into one canvas (every task of it, the ones that wait, the links
between them) and inserted in one transaction; from then on each task's outcome releases the
next ones in its own transaction (``pgtasks/sysdb/links.py``): no ``chord_unlock`` polling,
and nothing lost if a worker dies between two links.

- ``chain(a, b, c)``: ``b`` waits for ``a`` and gets its result first (unless immutable).
  A failure stops the chain; the tasks after it end FAILURE with the same error, so waiting
  on the chain's result raises it (Celery leaves them PENDING).
- ``group(a, b)``: sent together; a ``GroupResult``. A group followed by a task is a chord.
- ``chord(header, body)``: the body waits for every header task and gets the list of their
  results in header order; a header failure fails the body with ``ChordError``.
- ``link_error``: as in Celery, an errback that takes ``(request, exc, traceback)`` is called
  in the failing worker; one that takes the task id is a task released with that id.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgtasks.compat.canvas import Signature, maybe_signature
from pgtasks.compat.sending import Prepared, prepare
from pgtasks.engine.canvas import enqueue_canvas
from pgtasks.sysdb.records import LinkKind, TaskLink

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery


@dataclass(slots=True)
class Node:
    """A planned part of a canvas: the tasks that take its input, the tasks whose results
    leave it (several for a group), and the result handle the caller gets."""

    entries: list[str]
    exits: list[str]
    is_group: bool
    result: Any


@dataclass(slots=True)
class Plan:
    """Every task of a canvas, built before anything is inserted."""

    app: Celery
    prepared: list[Prepared] = field(default_factory=list)
    waiting: set[str] = field(default_factory=set)
    links: list[TaskLink] = field(default_factory=list)
    immutable: set[str] = field(default_factory=set)
    meta: dict[str, str] = field(default_factory=dict)

    def add(self, item: Any, waiting: bool, args: tuple[Any, ...] = (), root: str | None = None) -> Node:
        """Plan a signature or workflow; ``args`` go first (the caller's partial arguments)."""
        if isinstance(item, chain):
            return self._chain(item, waiting, args, root)
        if isinstance(item, chord):
            return self._chord(item, waiting, args, root)
        if isinstance(item, group):
            return self._group(item, waiting, args, root)
        sig = maybe_signature(item, app=self.app)
        if not isinstance(sig, Signature):
            raise TypeError(f"a canvas takes signatures and workflows, not {item!r}")
        return self._signature(sig, waiting, args, root)

    def _signature(self, sig: Signature, waiting: bool, args: tuple[Any, ...], root: str | None) -> Node:
        merged_args, kwargs, options = sig._merge(args)
        options = dict(options)
        callbacks, errbacks = options.pop("link", None) or [], options.pop("link_error", None) or []
        task_id = options.pop("task_id", None) or str(uuid.uuid4())
        root = root or task_id
        prepared = prepare(
            self.app, sig.name, merged_args, kwargs, task=sig._type, task_id=task_id, root_id=root, **options
        )
        self.prepared.append(prepared)
        meta: dict[str, Any] = {"root_id": root, "headers": options.get("headers") or {}}
        meta.update({k: options[k] for k in ("time_limit", "soft_time_limit") if options.get(k) is not None})
        # Celery calls an errback that takes (request, exc, traceback) in the failing worker,
        # at once; one that takes a task id is sent as a task (a link below).
        in_worker = [e for e in (maybe_signature(e, app=self.app) for e in errbacks) if _takes_request(e)]
        errbacks = [e for e in errbacks if maybe_signature(e, app=self.app) not in in_worker]
        if in_worker:
            meta["errbacks"] = [dict(e) for e in in_worker]
        self.meta[task_id] = json.dumps(meta, default=str)
        if waiting:
            self.waiting.add(task_id)
        if sig.immutable:
            self.immutable.add(task_id)
        node = Node([task_id], [task_id], False, self.app.AsyncResult(task_id, task_name=sig.name))
        for callback in callbacks:
            self.connect(node, self.add(callback, True, root=root))
        for errback in errbacks:
            handler = self.add(errback, True, root=root)
            for entry in handler.entries:
                self.links.append(
                    TaskLink(task_id, entry, LinkKind.ERRBACK, prepend=entry not in self.immutable)
                )
        return node

    def _chain(self, flow: chain, waiting: bool, args: tuple[Any, ...], root: str | None) -> Node:
        steps: list[Any] = []
        pending = list(flow.tasks)
        while pending:  # Celery: a group followed by a task is a chord
            step = pending.pop(0)
            if isinstance(step, group) and pending:
                step = chord(step, pending.pop(0))
            steps.append(step)
        if not steps:
            raise ValueError("an empty chain has nothing to run")
        first = self.add(steps[0], waiting, args, root)
        root = root or first.entries[0]
        previous, last = first, first
        for step in steps[1:]:
            last = self.add(step, True, root=root)
            self.connect(previous, last)
            if not last.is_group:
                last.result.parent = previous.result
            previous = last
        return Node(first.entries, last.exits, last.is_group, last.result)

    def _group(self, flow: group, waiting: bool, args: tuple[Any, ...], root: str | None) -> Node:
        from pgtasks.compat.result import GroupResult

        group_id = flow.options.get("task_id") or str(uuid.uuid4())
        members = [self.add(t, waiting, args, root) for t in flow.tasks]
        for position, member in enumerate(members):
            for exit_id in member.exits:
                self.links.append(TaskLink(group_id, exit_id, LinkKind.GROUP, position))
        entries = list(itertools.chain.from_iterable(m.entries for m in members))
        exits = list(itertools.chain.from_iterable(m.exits for m in members))
        return Node(entries, exits, True, GroupResult(group_id, [m.result for m in members], app=self.app))

    def _chord(self, flow: chord, waiting: bool, args: tuple[Any, ...], root: str | None) -> Node:
        header = self._group(flow.header, waiting, args, root)
        if flow.body is None:
            return header
        body = self.add(flow.body, True, root=root)
        self.connect(header, body)
        body.result.parent = header.result
        return body

    def connect(self, before: Node, after: Node) -> None:
        """``after`` waits for ``before``: one result (chain), or all of a group's (chord)."""
        for entry in after.entries:
            prepend = entry not in self.immutable
            if not before.is_group:
                self.links.extend(TaskLink(e, entry, LinkKind.CHAIN, prepend=prepend) for e in before.exits)
                continue
            for position, exit_id in enumerate(before.exits):
                self.links.append(TaskLink(exit_id, entry, LinkKind.CHORD, position, prepend))
            if not before.exits:  # an empty header: the body runs at once, with [] first
                self.waiting.discard(entry)
                if prepend:
                    self._prepend_now(entry, [])

    def _prepend_now(self, task_id: str, value: Any) -> None:
        for n, prepared in enumerate(self.prepared):
            if prepared.request.task_id == task_id:
                request = dataclasses.replace(prepared.request, args=(value, *prepared.request.args))
                self.prepared[n] = dataclasses.replace(prepared, request=request)

    def send(self) -> None:
        """Insert the whole canvas in one transaction, with the publish signals around it."""
        for prepared in self.prepared:
            prepared.publish(after=False)
        enqueue_canvas(
            self.app.engine,
            [p.request for p in self.prepared],
            frozenset(self.waiting),
            tuple(self.links),
            self.meta,
        )
        for prepared in self.prepared:
            prepared.publish(after=True)


def _takes_request(errback: Any) -> bool:
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


def send_canvas(app: Celery, item: Any, args: tuple[Any, ...] = ()) -> Any:
    """Plan and send a signature with callbacks, or a workflow; return its result handle."""
    plan = Plan(app)
    node = plan.add(item, False, tuple(args))
    plan.send()
    return node.result


class _Workflow(Signature):
    """What every workflow shares with a signature: options, ``|``, calling and sending."""

    def __init__(self, name: str, tasks: list[Any], app: Celery | None = None, **options: Any) -> None:
        super().__init__(name, (), {}, options, app=app)
        self["kwargs"] = {"tasks": tasks}

    @property
    def tasks(self) -> list[Any]:
        return list(self["kwargs"]["tasks"])

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
        if options:
            self.options.update(options)
        if self.app.conf.task_always_eager:
            return self.apply(args)
        return send_canvas(self.app, self, tuple(args or ()))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.apply_async(args)

    def __or__(self, other: Any) -> Any:
        return chain(self, other)

    def clone(self, args: Any = None, kwargs: Any = None, **opts: Any) -> Any:
        copy = type(self).__new__(type(self))
        dict.__init__(copy, self)
        copy._type, copy._app = self._type, self._app
        copy["options"] = {**self.options, **opts}
        return copy


class chain(_Workflow):
    """Tasks one after the other, each result passed to the next: ``chain(a.s(1), b.s())``
    or ``a.s(1) | b.s()``."""

    def __init__(self, *tasks: Any, app: Celery | None = None, **options: Any) -> None:
        if len(tasks) == 1 and isinstance(tasks[0], (list, tuple)):
            tasks = tuple(tasks[0])
        flat: list[Any] = []
        for task in tasks:  # chain(chain(a, b), c) is chain(a, b, c)
            flat.extend(task.tasks if isinstance(task, chain) else [task])
        super().__init__("celery.chain", flat, app, **options)

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

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        from pgtasks.compat.result import GroupResult

        results = [maybe_signature(t).apply(args) for t in self.tasks]
        return GroupResult(str(uuid.uuid4()), results, app=self.app)

    def __or__(self, other: Any) -> Any:
        return chord(self, other) if not isinstance(other, group) else chain(self, other)


class chord(_Workflow):
    """A group whose results go, as one list, to a body: ``chord(header)(body)``."""

    def __init__(self, header: Any, body: Any = None, app: Celery | None = None, **options: Any) -> None:
        header = header if isinstance(header, group) else group(header, app=app)
        super().__init__("celery.chord", [header, body], app, **options)

    @property
    def header(self) -> group:
        return self.tasks[0]  # type: ignore[no-any-return]

    @property
    def body(self) -> Any:
        return self.tasks[1]

    def __call__(self, body: Any = None, **options: Any) -> Any:
        if body is not None:
            return chord(self.header, body, app=self._app).apply_async(**options)
        return self.apply_async(**options)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        results = self.header.apply(args)
        values = [r.get() for r in results.results]
        return maybe_signature(self.body).apply((values,))


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


def register_builtins(app: Celery) -> None:
    """The tasks behind ``xmap``/``xstarmap``/``chunks``, in every worker of the app."""

    @app.task(name="celery.map")
    def celery_map(task: str, it: list[Any]) -> list[Any]:
        fn = app.tasks[task]
        return [fn(item) for item in it]

    @app.task(name="celery.starmap")
    def celery_starmap(task: str, it: list[Any]) -> list[Any]:
        fn = app.tasks[task]
        return [fn(*item) for item in it]
