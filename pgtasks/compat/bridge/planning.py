"""Planning a canvas into linked tasks: a signature with ``link``/``link_error`` callbacks, or
a workflow (``chain``, ``group``, ``chord``), becomes every task of it, the ones that wait, and
the links between them, inserted in one transaction; from then on each task's outcome releases
the next ones in its own transaction (``pgtasks/sysdb/links.py``): no ``chord_unlock`` polling,
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

import contextlib
import dataclasses
import itertools
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.chain_requests import (
    CALLBACK_IDS_KEY,
    CHAIN_KEY,
    CHAIN_NEXT_KEY,
    LINKS_KEY,
    shown_steps,
    step_description,
)
from pgtasks.compat.bridge.django_results import mirror_of
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.publishing import Prepared, prepare
from pgtasks.compat.bridge.send_errors import sending
from pgtasks.compat.celery.canvas.chain import chain
from pgtasks.compat.celery.canvas.chord import chord
from pgtasks.compat.celery.canvas.group import group
from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature, takes_request
from pgtasks.compat.celery.exceptions import ImproperlyConfigured, Replaced
from pgtasks.compat.celery.result.async_result import AsyncResult, eldest
from pgtasks.compat.celery.result.group_result import GroupResult
from pgtasks.compat.celery.utils.functional import maybe_list
from pgtasks.engine.canvas import close_chord_header, enqueue_canvas
from pgtasks.engine.context import running_context
from pgtasks.engine.ids import new_task_id
from pgtasks.engine.serialization import SERIALIZERS
from pgtasks.sysdb.errors import NotInChord
from pgtasks.sysdb.records import LinkKind, TaskLink

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.app.task import Task

# A chain's options that are not its first task's: its id (the last task's), its callbacks,
# and the canvas bookkeeping Celery keeps in a workflow's options.
CHAIN_OWN_OPTIONS = frozenset(
    {"task_id", "link", "link_error", "group_id", "group_index", "chord", "root_id", "parent_id"}
)


CALL_ERRBACK = "pgtasks.call_errback"  # compat/celery/app/builtins.py


@dataclass(slots=True)
class Node:
    """A planned part of a canvas: the tasks that take its input, the tasks whose results
    leave it (several for a group), and the result handle the caller gets."""

    entries: list[str]
    exits: list[str]
    is_group: bool
    result: AsyncResult | GroupResult


@dataclass(slots=True)
class Plan:
    """Every task of a canvas, built before anything is inserted."""

    app: Celery
    prepared: list[Prepared] = field(default_factory=list)
    waiting: set[str] = field(default_factory=set)
    links: list[TaskLink] = field(default_factory=list)
    immutable: set[str] = field(default_factory=set)
    meta: dict[str, str] = field(default_factory=dict)
    chords: list[tuple[GroupResult, int]] = field(default_factory=list)  # headers, their sizes
    # A chord body's last task: its header's group id, the request.group it gets at the send
    # unless a group the chord is in names it first (as Celery freezes them)
    body_groups: dict[str, str] = field(default_factory=dict)
    # With task_inherit_parent_priority: the priority the tasks being planned take (Celery's
    # worker sends a chain's next step and a task's callbacks with the priority of the task
    # that ran, over their own), else None.
    inherited: int | None = None

    def add(
        self,
        item: Any,
        waiting: bool,
        args: tuple[Any, ...] = (),
        root: str | None = None,
        kwargs: dict[str, Any] | None = None,
        given_as: str = "a canvas",
    ) -> Node:
        """Plan a signature or workflow; ``args`` go first and ``kwargs`` are merged (the
        caller's partial arguments: to each task of a group or chord header, to the first
        task of a chain; an immutable signature takes none). ``given_as``: what the
        TypeError for anything else names (``link``, ``link_error``)."""
        if isinstance(item, chain):
            return self._chain(item, waiting, args, root, kwargs)
        if isinstance(item, chord):
            return self._chord(item, waiting, args, root, kwargs)
        if isinstance(item, group):
            return self._group(item, waiting, args, root, kwargs)
        sig = maybe_signature(item, app=self.app)
        if (
            not isinstance(sig, Signature)
            and isinstance(getattr(item, "name", None), str)
            and callable(getattr(item, "s", None))
        ):
            sig = item.s()  # a task object (``chord([tsum, tsum], ...)``): Celery takes its signature
        if not isinstance(sig, Signature):
            raise TypeError(f"{given_as} takes signatures and workflows, not {item!r}")
        return self._signature(sig, waiting, args, root, kwargs)

    def _signature(
        self, sig: Signature, waiting: bool, args: tuple[Any, ...], root: str | None, partial: Any = None
    ) -> Node:
        merged_args, kwargs, options = sig._merge(args, partial)
        options = dict(options)
        if self.inherited is not None:
            options["priority"] = self.inherited
        callbacks, errbacks = options.pop("link", None) or [], options.pop("link_error", None) or []
        task_id = options.pop("task_id", None) or new_task_id()
        root = root or task_id
        prepared = prepare(
            self.app, sig.name, merged_args, kwargs, task=sig._type, task_id=task_id, root_id=root, **options
        )
        self.prepared.append(prepared)
        meta: dict[str, Any] = {
            "root_id": root,
            "headers": options.get("headers") or {},
            "origin": prepared.headers["origin"],
        }
        meta.update({k: options[k] for k in ("time_limit", "soft_time_limit") if options.get(k) is not None})
        # How the sender asks the arguments to be shown (Celery's way to hide sensitive ones):
        # read by the worker's log lines, the request and django-celery-results' rows.
        shown = ("argsrepr", "kwargsrepr")
        meta.update({k: prepared.headers[k] for k in shown if options.get(k) is not None})
        if options.get("shadow"):  # the name they show it by (Celery's shadow; the request's too)
            meta["shadow"] = str(options["shadow"])
        if prepared.extra:
            meta["properties"] = prepared.extra
        if prepared.stamps:
            meta["stamps"] = prepared.stamps
        if options.get("ignore_result"):  # the outcome is stored (a canvas needs it), read as none
            meta["ignore_result"] = True
        if callbacks or errbacks:  # as Celery's message embeds them, for the worker's request
            meta[LINKS_KEY] = {"callbacks": self._dicts(callbacks), "errbacks": self._dicts(errbacks)}
        # Celery calls an errback that takes (request, exc, traceback) in the failing worker,
        # at once; one that takes a task id is sent as a task (a link below).
        in_worker = [e for e in (maybe_signature(e, app=self.app) for e in errbacks) if takes_request(e)]
        errbacks = [e for e in errbacks if maybe_signature(e, app=self.app) not in in_worker]
        if in_worker:
            meta["errbacks"] = [dict(e) for e in in_worker]
        self.meta[task_id] = _meta_text(meta)
        if waiting:
            self.waiting.add(task_id)
        if sig.immutable:
            self.immutable.add(task_id)
        node = Node([task_id], [task_id], False, self.app.AsyncResult(task_id, task_name=sig.name))
        callback_ids: list[str] = []
        for callback in callbacks:
            with self._after(node):
                linked = self.add(callback, True, root=root, given_as="link")
            self.connect(node, linked)
            callback_ids += linked.entries
        if callback_ids:  # what clearing self.request.callbacks stops (bridge/chain_requests.py)
            meta[CALLBACK_IDS_KEY] = callback_ids
            self.meta[task_id] = _meta_text(meta)
        for errback in errbacks:
            handler = self.add(errback, True, root=root, given_as="link_error")
            for entry in handler.entries:
                self.links.append(
                    TaskLink(task_id, entry, LinkKind.ERRBACK, prepend=entry not in self.immutable)
                )
        # A task that waits may fail without running (its chord's header failed): then a
        # task calls the errbacks its worker would have called.
        for errback in in_worker if waiting else ():
            caller = Signature(CALL_ERRBACK, (dict(errback),), app=self.app)
            entry = self.add(caller, True, root=root).entries[0]
            self.links.append(TaskLink(task_id, entry, LinkKind.ERRBACK_UNRUN, prepend=True))
        return node

    @contextlib.contextmanager
    def _after(self, before: Node) -> Iterator[None]:
        """Plan what runs after the single task ``before`` with its priority, when the app's
        ``task_inherit_parent_priority`` says so."""
        inherited = self.inherited
        if len(before.exits) == 1 and flag(
            "task_inherit_parent_priority", self.app.conf.task_inherit_parent_priority
        ):
            # the task ``before`` was planned last, or just before its callbacks
            sent = (p for p in reversed(self.prepared) if p.request.options.task_id == before.exits[0])
            inherited = next((p.request.options.priority for p in sent), inherited)
        previous, self.inherited = self.inherited, inherited
        try:
            yield
        finally:
            self.inherited = previous

    def _dicts(self, linked: list[Any]) -> list[dict[str, Any]] | None:
        """Linked signatures as dicts (None for none; what is no signature is refused below,
        where it is added, with the option's name)."""
        signatures = [maybe_signature(s, app=self.app) for s in linked]
        return [dict(s) for s in signatures if isinstance(s, Signature)] or None

    def _chain(
        self, flow: chain, waiting: bool, args: tuple[Any, ...], root: str | None, kwargs: Any = None
    ) -> Node:
        steps: list[Any] = []
        pending = list(flow.tasks)
        while pending:  # Celery: a group followed by a task is a chord
            step = maybe_signature(pending.pop(0), app=self.app)
            if isinstance(step, group) and len(step.tasks) == 1:
                step = maybe_signature(step.tasks[0], app=self.app)  # a group of one is its task
            elif isinstance(step, group) and not step.tasks and (steps or pending):
                continue  # an empty group inside a chain is skipped, as in Celery
            if isinstance(step, group) and pending:
                step = chord(step, pending.pop(0))
            steps.append(step)
        if not steps:
            raise ValueError("an empty chain has nothing to run")
        # As Celery sends a chain: its own options (apply_async(headers=, countdown=, queue=,
        # ...), or .set()) go to its first task; its id and callbacks are handled elsewhere.
        given = {k: v for k, v in flow.options.items() if k not in CHAIN_OWN_OPTIONS}
        if given and isinstance(steps[0], Signature) and not isinstance(steps[0], (chain, group, chord)):
            steps[0] = steps[0].clone(**given)
        # The chain's errbacks go to each of its tasks (a chord: its body, and its header with
        # task_allow_error_cb_on_chord_header); only the task that fails calls them.
        for errback in maybe_list(flow.options.get("link_error")) or ():
            for step in steps:
                step.link_error(errback)
        first = self.add(steps[0], waiting, args, root, kwargs)
        root = root or first.entries[0]
        previous, last = first, first
        nodes = [first]
        for step in steps[1:]:
            with self._after(previous):
                last = self.add(step, True, root=root)
            self.connect(previous, last)
            eldest(last.result).parent = previous.result
            previous = last
            nodes.append(last)
        self._remember_chain(steps, nodes)
        return Node(first.entries, last.exits, last.is_group, last.result)

    def _remember_chain(self, steps: list[Any], nodes: list[Node]) -> None:
        """Celery's ``self.request.chain`` of each single task of a chain: the steps after it
        (the next one last), and the ids of the next step's first tasks, which clearing it
        stops (bridge/chain_requests.py)."""
        described = [
            step_description(step, None if node.is_group else node.result.id)
            for step, node in zip(steps, nodes, strict=True)
        ]
        for position, node in enumerate(nodes[:-1]):
            if node.is_group or len(node.exits) != 1 or node.exits[0] not in self.meta:
                continue
            meta = SERIALIZERS["json"].loads(self.meta[node.exits[0]])
            meta[CHAIN_KEY] = shown_steps(described[position + 1 :])
            meta[CHAIN_NEXT_KEY] = list(nodes[position + 1].entries)
            self.meta[node.exits[0]] = _meta_text(meta)

    def _group(
        self,
        flow: group,
        waiting: bool,
        args: tuple[Any, ...],
        root: str | None,
        kwargs: Any = None,
        header: bool = False,
    ) -> Node:
        group_id = flow.options.get("task_id") or str(uuid.uuid4())
        # A group of one sent alone gives its member's results (a chain ending in a group:
        # that group's); in a chord header, or beside other members, each member is one value.
        nest = header or len(flow.tasks) > 1
        tasks = [_one_value(self.app, t) if nest else t for t in flow.tasks]
        members = [self.add(t, waiting, args, root, kwargs) for t in tasks]
        for position, member in enumerate(members):
            for exit_id in member.exits:
                self.join_group(group_id, exit_id, position)
        entries = list(itertools.chain.from_iterable(m.entries for m in members))
        exits = list(itertools.chain.from_iterable(m.exits for m in members))
        # Nested groups are unrolled, as Celery unrolls them: one flat list of results.
        results: list[Any] = []
        for member in members:
            nested = member.result
            results.extend(nested.results if isinstance(nested, GroupResult) else [nested])
        return Node(entries, exits, True, GroupResult(group_id, results, app=self.app))

    def _chord(
        self, flow: chord, waiting: bool, args: tuple[Any, ...], root: str | None, kwargs: Any = None
    ) -> Node:
        header = self._group(flow.header, waiting, args, root, kwargs, header=flow.body is not None)
        if flow.body is None:
            return header
        body = self.add(flow.body, True, root=root)
        if root is None:  # a chord sent alone: the body's root is that of the task releasing it
            for entry in body.entries:
                meta = SERIALIZERS["json"].loads(self.meta[entry])  # typed: bytes stay bytes
                meta.pop("root_id", None)
                self.meta[entry] = _meta_text(meta)
        self.connect(header, body)
        header_group = header.result.id if isinstance(header.result, GroupResult) else None
        if header_group is not None and not body.is_group:
            for exit_id in body.exits:
                self.body_groups.setdefault(exit_id, header_group)
        # As Celery: ``self.request.chord`` of the header tasks (a chain's last) is the body,
        # with the id of its result
        body_sig = dict(flow.body)
        body_sig["options"] = {**dict(body_sig.get("options") or {}), "task_id": body.result.id}
        for exit_id in header.exits:
            meta = SERIALIZERS["json"].loads(self.meta[exit_id])
            meta["chord"] = body_sig
            self.meta[exit_id] = _meta_text(meta)
        if isinstance(header.result, GroupResult) and mirror_of(self.app) is not None:
            # django-celery-results' ChordCounter: counted down as each header task ends
            self.chords.append((header.result, len(header.exits)))
            for exit_id in header.exits:
                meta = json.loads(self.meta[exit_id])
                meta["chord_group"] = header.result.id
                self.meta[exit_id] = _meta_text(meta)
        # As Celery: in a chain, the body's first result has the header as parent; a chord
        # sent alone gives it to the body's result (a chain body's last).
        (body.result if root is None and not waiting else eldest(body.result)).parent = header.result
        # The chord takes its input in its header (inside a chain: the previous result goes
        # to every header task) and gives the body's result.
        return Node(header.entries or body.entries, body.exits, body.is_group, body.result)

    def join_group(self, group_id: str, task_id: str, position: int) -> None:
        """``task_id`` gives the result at ``position`` of the group ``group_id``; as Celery, its
        request's ``group``/``group_index`` name them (a nested group's task keeps its own)."""
        self.links.append(TaskLink(group_id, task_id, LinkKind.GROUP, position))
        meta = SERIALIZERS["json"].loads(self.meta[task_id])
        if "group_id" not in meta:
            meta.update(group_id=group_id, group_index=position)
            self.meta[task_id] = _meta_text(meta)

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
            if prepared.request.options.task_id == task_id:
                request = dataclasses.replace(prepared.request, args=(value, *prepared.request.args))
                self.prepared[n] = dataclasses.replace(prepared, request=request)

    def send(
        self,
        replacing: tuple[str, str, str | None] | None = None,
        stored: frozenset[str] = frozenset(),
        joining: tuple[str, str] | None = None,
    ) -> None:
        """Insert the whole canvas in one transaction, with the publish signals around it
        (``replacing``: the running task it replaces, see :func:`send_replacement`;
        ``joining``: see :func:`add_to_running_chord`)."""
        for task_id, group_id in self.body_groups.items():
            meta = SERIALIZERS["json"].loads(self.meta[task_id])
            if "group_id" not in meta:  # as Celery: no group_index
                meta["group_id"] = group_id
                self.meta[task_id] = _meta_text(meta)
        for prepared in self.prepared:
            prepared.publish(after=False)
        mirror = mirror_of(self.app) if self.chords else None
        if mirror is not None:  # before its header can end, as Celery's apply_chord
            for header, size in self.chords:
                mirror.chord_sent(header, size)
        enqueue_canvas(
            self.app.engine,
            [p.request for p in self.prepared],
            frozenset(self.waiting),
            tuple(self.links),
            self.meta,
            replacing,
            stored,
            joining,
        )
        for prepared in self.prepared:
            prepared.publish(after=True)


def _meta_text(meta: dict[str, Any]) -> str:
    """A task's meta as stored: typed JSON (an errback's bytes arguments stay bytes), read
    back by bridge/requests.py; a value JSON cannot carry is stored as its text."""
    try:
        return SERIALIZERS["json"].dumps(meta)
    except (TypeError, ValueError):
        return json.dumps(meta, default=str)


def _one_value(app: Celery, member: Any) -> Any:
    """A group member as Celery nests it: a chain ending in a group is one member whose value
    is that group's list (Celery unrolls nested groups only), so it gets Celery's
    ``celery.accumulate`` body, as a replacement does."""
    member = maybe_signature(member, app=app)
    if not isinstance(member, chain) or not member.tasks:
        return member
    last = maybe_signature(member.tasks[-1], app=app)
    if isinstance(last, group) and len(last.tasks) > 1:
        accumulate = Signature("celery.accumulate", (), {"index": 0}, app=app)
        options = {k: v for k, v in member.options.items() if k != "task_id"}
        return chain(*member.tasks, accumulate, app=app, **options)
    return member


def send_lazy_chord(
    app: Celery, flow: chord, header: Iterator[Any], args: tuple[Any, ...]
) -> AsyncResult | GroupResult:
    """Send a chord whose header is a generator as Celery does, task by task while the
    generator yields: the body first, waiting on an open link of the header's group id; each
    header task then in its own transaction (so it may run before the next one is yielded);
    and last the close, which starts the body if every header task succeeded already."""
    group_id = flow.options.get("group_id") or str(uuid.uuid4())
    plan = Plan(app)
    body = plan.add(flow.body, True, root=group_id)
    immutable = set(plan.immutable)
    for entry in body.entries:
        plan.links.append(TaskLink(group_id, entry, LinkKind.CHORD, -1, entry not in immutable))
    plan.send(stored=frozenset({group_id}))
    results: list[Any] = []
    position = 0
    for item in header:
        part = Plan(app)
        node = part.add(item, False, args, group_id)
        for exit_id in node.exits:
            for entry in body.entries:
                part.links.append(TaskLink(exit_id, entry, LinkKind.CHORD, position, entry not in immutable))
            part.join_group(group_id, exit_id, position)
            position += 1
        part.send(stored=frozenset(body.entries))
        nested = node.result
        results.extend(nested.results if isinstance(nested, GroupResult) else [nested])
    close_chord_header(app.engine, group_id, tuple(body.entries))
    body.result.parent = GroupResult(group_id, results, app=app)
    return body.result


def send_canvas(
    app: Celery, item: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
) -> AsyncResult | GroupResult:
    """Plan and send a signature with callbacks, or a workflow; return its result handle.
    An unreachable database raises kombu's ``OperationalError`` (send_errors.py)."""
    with sending():
        if isinstance(item, chord) and item.body is not None:
            header = item.take_lazy_header()
            if header is not None:
                return send_lazy_chord(app, item, header, tuple(args))
        plan = Plan(app)
        node = plan.add(item, False, tuple(args), kwargs=kwargs)
        plan.send()
        return node.result


def replacement_of(app: Celery, sig: Any) -> Any:
    """Celery's shape of a replacement: a group (or a chain or chord ending in one) gets an
    ``accumulate`` body, so that the replaced task's result is the group's list."""
    sig = maybe_signature(sig, app=app)
    accumulate = Signature("celery.accumulate", (), {"index": 0}, app=app)
    if isinstance(sig, chain):
        if not sig.tasks:
            raise ImproperlyConfigured("Cannot replace with an empty chain")
        if isinstance(maybe_signature(sig.tasks[-1], app=app), group):
            return chain(*sig.tasks, accumulate, app=app)
        return sig
    if isinstance(sig, group):
        return chord(sig, accumulate, app=app)
    if isinstance(sig, chord) and sig.body is None:
        return chord(sig.header, accumulate, app=app)
    if not isinstance(sig, Signature):
        raise TypeError(f"a task can be replaced by a signature or a workflow, not {sig!r}")
    return sig


def send_replacement(
    app: Celery, sig: Any, task_id: str, root_id: str | None, replacing: tuple[str, str, str | None]
) -> AsyncResult | GroupResult:
    """Send ``sig`` in place of the running task ``task_id``: in one transaction the task stops
    running (WAITING) and its replacement is inserted with a ``replace`` link from its last
    task, so the task ends with the replacement's outcome and its own chain, chord,
    callbacks and errbacks follow from there (``pgtasks/sysdb/links.py``)."""
    plan = Plan(app)
    node = plan.add(replacement_of(app, sig), False, (), root_id or task_id)
    if node.is_group or len(node.exits) != 1:  # replacement_of always ends in one task
        raise ImproperlyConfigured(f"a replacement must end in one task, not {sig!r}")
    plan.links.append(TaskLink(node.exits[0], task_id, LinkKind.REPLACE, prepend=False))
    plan.send(replacing)
    return node.result


def replace_running_task(task: Task, sig: Any) -> Any:
    """``Task.on_replace``: send ``sig`` in place of ``task``, which must be running in this
    worker, and raise :class:`~celery.exceptions.Replaced` (an Ignore) to end the attempt; a
    task run eagerly or called directly runs ``sig`` here and returns its result."""
    request = task.request
    if request.is_eager or request.called_directly:
        return sig.apply().get(disable_sync_subtasks=False)
    ctx = running_context()
    if ctx is None or request.id != ctx.task_id:
        raise RuntimeError(f"{task.name}.replace() must be called by the task while it runs")
    replacing = (ctx.task_id, ctx.executor_id, ctx.record.claim_token)
    if request.stamps:  # the replacement keeps the task's stamps, beside its own
        sig = maybe_signature(sig, app=task.app)
        sig.stamp(append_stamps=False, **request.stamps)
    send_replacement(task.app, sig, ctx.task_id, request.root_id, replacing)
    raise Replaced("Replaced by new task")


def add_to_running_chord(task: Task, sig: Any) -> AsyncResult | GroupResult:
    """``Task.add_to_chord``: send ``sig`` as one more header task of the chord ``task`` (running
    in this worker) belongs to; the body then waits for it too, and gets its result last. A
    group is sent as one member whose result is its list. The task and the header's new count
    are written in one transaction: ValueError, and nothing sent, if ``task`` is in no chord."""
    ctx = running_context()
    if ctx is None or task.request.id != ctx.task_id:
        raise ValueError("Current task is not member of any chord")
    plan = Plan(task.app)
    node = plan.add(replacement_of(task.app, sig), False, (), task.request.root_id or ctx.task_id)
    try:
        plan.send(joining=(ctx.task_id, node.exits[0]))
    except NotInChord:
        raise ValueError("Current task is not member of any chord") from None
    return node.result
