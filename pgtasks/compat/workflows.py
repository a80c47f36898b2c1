"""The workflow types of ``celery.canvas``: ``chain`` (or ``a | b``), ``group`` and
``chord``, signatures whose members are signatures. Sending one goes through its app
(``app.send_canvas``), which plans it into linked tasks (planning.py) and inserts them in one
transaction; ``apply`` runs it here. ``link`` / ``link_error`` attach callbacks where Celery
attaches them (a chain's last task, a group's members, a chord's body).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from pgtasks.compat.result import GroupResult
from pgtasks.compat.signatures import Signature, maybe_signature, takes_request

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery

__all__ = ["Workflow", "chain", "chord", "group"]


def _members_link(members: list[Any], sig: Any, error: bool) -> Any:
    """Link ``sig`` (an immutable copy, as Celery does) to each of ``members``."""
    for member in members:
        copy = maybe_signature(sig).clone()
        copy.set(immutable=True)
        member.link_error(copy) if error else member.link(copy)
    return sig


class Workflow(Signature):
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


class chain(Workflow, kind="celery.chain"):
    """Tasks one after the other, each result passed to the next: ``chain(a.s(1), b.s())``
    or ``a.s(1) | b.s()``."""

    def __init__(self, *tasks: Any, app: Celery | None = None, **options: Any) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], dict) and hasattr(tasks[0], "__iter__"):
            tasks = tuple(tasks[0])  # a list, tuple or generator of signatures
        flat: list[Any] = []
        for task in tasks:  # chain(chain(a, b), c) is chain(a, b, c)
            flat.extend(task.tasks if isinstance(task, chain) else [task])
        super().__init__("celery.chain", flat, app, **options)

    @classmethod
    def from_parts(cls, parts: list[Any], app: Celery | None, options: dict[str, Any]) -> Signature:
        return cls(*parts, app=app, **options)

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

    def unchain_tasks(self) -> list[Any]:
        """The chain's tasks as separate signatures (copies): the last one carries the chain's
        callbacks, each carries its errbacks."""
        members = [member.clone() for member in self._signatures()]
        for callback in _as_list(self.options.get("link")):
            if members:
                members[-1].link(callback)
        for errback in _as_list(self.options.get("link_error")):
            for member in members:
                member.link_error(errback)
        return members

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        """Run the chain here, each task after the other (eager mode)."""
        result = None
        previous: tuple[Any, ...] = tuple(args or ())
        for task in self.tasks:
            result = (
                task.apply(previous) if isinstance(task, Workflow) else maybe_signature(task).apply(previous)
            )
            if result.state != "SUCCESS":
                return result
            previous = (result.get(),)
        return result


class group(Workflow, kind="celery.group"):
    """Tasks sent together: ``group(add.s(i, i) for i in range(10))`` -> GroupResult."""

    def __init__(self, *tasks: Any, app: Celery | None = None, **options: Any) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], dict) and hasattr(tasks[0], "__iter__"):
            tasks = tuple(tasks[0])
        super().__init__("celery.group", list(tasks), app, **options)

    @classmethod
    def from_parts(cls, parts: list[Any], app: Celery | None, options: dict[str, Any]) -> Signature:
        return cls(*parts, app=app, **options)

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

    def skew(self, start: float = 1.0, stop: float | None = None, step: float = 1.0) -> group:
        """Spread the members' start: countdown ``start``, ``start + step``, ... (held at
        ``stop`` once reached)."""
        countdown = start
        for member in self._signatures():
            member.set(countdown=countdown)
            countdown = countdown + step if stop is None else min(countdown + step, stop)
        return self


class chord(Workflow, kind="celery.chord"):
    """A group whose results go, as one list, to a body: ``chord(header)(body)``."""

    def __init__(self, header: Any, body: Any = None, app: Celery | None = None, **options: Any) -> None:
        # A generator header is kept as it is: sending the chord consumes it task by task,
        # as Celery does (planning.py); anything else that reads the header unrolls it.
        self._lazy = header if not isinstance(header, dict) and hasattr(header, "__next__") else None
        if self._lazy is None:
            header = header if isinstance(header, group) else group(header, app=app)
        super().__init__("celery.chord", [group([], app=app) if self._lazy else header, body], app, **options)

    @classmethod
    def from_parts(cls, parts: list[Any], app: Celery | None, options: dict[str, Any]) -> Signature:
        return cls(parts[0], parts[1] if len(parts) > 1 else None, app=app, **options)

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


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
