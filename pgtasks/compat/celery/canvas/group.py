"""Celery's ``group`` (``celery.canvas.group``): tasks sent together, whose result is a
GroupResult; a group followed by a task is a chord."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.canvas.chain import chain
from pgtasks.compat.celery.canvas.reprs import given_shape
from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature, workflow_type
from pgtasks.compat.celery.canvas.workflow import Workflow
from pgtasks.compat.celery.result.group_result import GroupResult

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["group"]


@Signature.register_type(name="celery.group")
class group(Workflow):
    """Tasks sent together: ``group(add.s(i, i) for i in range(10))`` -> GroupResult."""

    def __init__(self, *tasks: Any, app: Celery | None = None, **options: Any) -> None:
        shape = "tuple" if len(tasks) != 1 else "list"  # as Celery keeps them (for its repr)
        if len(tasks) == 1 and not isinstance(tasks[0], dict) and hasattr(tasks[0], "__iter__"):
            shape, tasks = given_shape(tasks[0]), tuple(tasks[0])
        super().__init__("celery.group", list(tasks), app, **options)
        self._shape = shape

    @classmethod
    def from_parts(cls, parts: list[Any], app: Celery | None, options: dict[str, Any]) -> Signature:
        return cls(list(parts), app=app, **options)  # a list, as Celery rebuilds a group

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        """Send the group. As Celery, ``link=`` and ``link_error=`` are refused here: a
        callback after a group is a chord, an errback goes on the members (``link_error()``)."""
        if options.get("link") is not None:
            raise TypeError("Cannot add link to group: use a chord")
        if options.get("link_error") is not None:
            raise TypeError("Cannot add link to group: do that on individual tasks")
        return super().apply_async(args, kwargs, route_name, **options)

    def link(self, callback: Any) -> Any:
        """As Celery: ``callback`` (immutable: no result is passed) linked to the first task."""
        members = self._signatures()
        if not members:
            return super().link(callback)
        members[0].link(maybe_signature(callback, app=self._app).clone().set(immutable=True))
        return callback

    def link_error(self, errback: Any) -> Any:
        """As Celery: a copy of ``errback`` linked to every task of the group, so each member
        that fails calls it once."""
        members = self._signatures()
        if not members:
            return super().link_error(errback)
        errback = maybe_signature(errback, app=self._app)
        for member in members:
            member.link_error(errback.clone())
        return errback

    def stamp(self, visitor: Any = None, append_stamps: bool = False, **headers: Any) -> None:
        """Stamp every member of the group and its links (``on_group_start`` / ``on_group_end``)."""
        hooks = ("on_group_start", "on_group_end")
        self._stamp_members(visitor, append_stamps, headers, hooks, self._signatures())

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        results: list[Any] = []
        for member in self.tasks:
            signature = maybe_signature(member)
            result = signature.apply(args)
            # a nested group's members join this group's; a chain ending in a group stays one
            results.extend(result.results if isinstance(signature, group) else [result])
        return GroupResult(str(uuid.uuid4()), results, app=self.app)

    def freeze(self, _id: str | None = None, **kwargs: Any) -> Any:
        """Fix the group's id (``_id`` when given) and every member's now; the GroupResult
        sending it gives (a nested group's members unrolled into it)."""
        group_id = _id or self.options.get("task_id") or str(uuid.uuid4())
        self.options["task_id"] = group_id
        results: list[Any] = []
        for member in self._signatures():
            frozen = member.freeze()
            results.extend(frozen.results if isinstance(member, group) else [frozen])
        return GroupResult(group_id, results, app=self.app)

    def __or__(self, other: Any) -> Any:
        """``group | task`` is a chord (chord.py imports this module: looked up by name);
        ``group | group`` a chain."""
        if not isinstance(other, dict):
            return NotImplemented
        return (
            workflow_type("celery.chord")(self, other) if not isinstance(other, group) else chain(self, other)
        )

    def skew(self, start: float = 1.0, stop: float | None = None, step: float = 1.0) -> group:
        """Spread the members' start: countdown ``start``, ``start + step``, ... (held at
        ``stop`` once reached)."""
        countdown = start
        for member in self._signatures():
            member.set(countdown=countdown)
            countdown = countdown + step if stop is None else min(countdown + step, stop)
        return self
