"""What pgtasks' workflow types (``chain``, ``group``, ``chord``, ``xmap``, ...) share: a
signature whose members are signatures (Celery's workflow classes each repeat it). Sending one
goes through its app (``app.send_canvas``), which plans it into linked tasks
(bridge/planning.py) and inserts them in one transaction; ``apply`` runs it here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.celery.canvas.reprs import canvas_repr
from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature, stamp_links, workflow_type
from pgtasks.compat.celery.canvas.stamping import stamp_headers
from pgtasks.compat.celery.utils.functional import maybe_list

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["Workflow"]


class Workflow(Signature):
    """What every workflow shares with a signature: options, ``|``, calling and sending."""

    _lazy: Any = None  # a chord's header while it is still a generator
    _shape: str | None = None  # how a group's tasks were given, for its repr (canvas/reprs.py)
    _given: Any = None  # the items a map or chunks was given, for its repr

    def __init__(self, name: str, tasks: list[Any], app: Celery | None = None, **options: Any) -> None:
        super().__init__(name, (), {}, options, app=app)
        self["kwargs"] = {"tasks": tasks}
        if name in ("celery.chain", "celery.group", "celery.chord"):  # as Celery's dicts say
            self["subtask_type"] = name.removeprefix("celery.")

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
        """As Celery's: the app given, else the first member's (a task's app, or a nested
        workflow's), else the current app."""
        return own_app(self) or Signature.app.fget(self)  # type: ignore[attr-defined]

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        for callback in maybe_list(options.pop("link", None)) or ():
            self.link(callback)
        for errback in maybe_list(options.pop("link_error", None)) or ():
            self.link_error(errback)
        if options:
            self.options.update(options)
        if flag("task_always_eager", self.app.conf.task_always_eager):
            return self.apply(args)
        return self.app.send_canvas(self, tuple(args or ()), dict(kwargs or {}))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.apply_async(args)

    def __repr__(self) -> str:
        """As Celery prints it (see canvas/reprs.py)."""
        return canvas_repr(self)

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        return workflow_type("celery.chain")(self, other)

    def _stamp_members(
        self, visitor: Any, append: bool, headers: dict[str, Any], hooks: tuple[str, str], members: list[Any]
    ) -> dict[str, Any]:
        """Stamp the links and ``members`` of this workflow with ``headers`` and what the
        visitor's ``hooks`` (its start and end of this kind of workflow) add; the stamps."""
        start, end = hooks
        visited = (getattr(visitor, start)(self, **headers) or {}) if visitor is not None else None
        headers = stamp_headers(self, visited, append, headers)
        stamp_links(self, visitor, append, headers)
        for member in members:
            member.stamp(visitor, append, **headers)
        if visitor is not None:
            getattr(visitor, end)(self, **headers)
        return headers

    def clone(self, args: Any = None, kwargs: Any = None, **opts: Any) -> Any:
        copy = type(self).__new__(type(self))
        dict.__init__(copy, self)
        copy._type, copy._app = self._type, self._app
        copy._shape, copy._given = self._shape, self._given
        if self._lazy is not None:  # a generator header goes with the copy
            copy._lazy, self._lazy = self._lazy, None
        copy["options"] = {**self.options, **opts}
        return copy


def own_app(sig: Any) -> Celery | None:
    """The app a signature names itself: the one it was given, its task's, or (a workflow)
    its first member's that names one; None when none does (the current app is then used)."""
    if not isinstance(sig, Signature):
        return None  # a member still in its dict form names no app
    if sig._app is not None:
        return sig._app
    if sig._type is not None:
        return getattr(sig._type, "app", None)
    if isinstance(sig, Workflow):
        for member in sig["kwargs"]["tasks"]:
            found = own_app(member)
            if found is not None:
                return found
    return None
