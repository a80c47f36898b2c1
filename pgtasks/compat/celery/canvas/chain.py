"""Celery's ``chain`` (``celery.canvas.chain``, or ``a | b``): tasks one after the other, each
result passed to the next. Where a chain's callbacks go is decided here; its errbacks stay in
its options (``link_error``) until the planner (bridge/planning.py) links them to each of its
tasks, as Celery does when it sends a chain."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature
from pgtasks.compat.celery.canvas.workflow import Workflow
from pgtasks.compat.celery.result.async_result import eldest
from pgtasks.compat.celery.utils.functional import maybe_list

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["chain"]


@Signature.register_type(name="celery.chain")
class chain(Workflow):
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

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        """Send the chain; errbacks given here replace the chain's own (as Celery merges a
        chain's options)."""
        errbacks = options.pop("link_error", None)
        flow = self if errbacks is None else self.clone(link_error=list(maybe_list(errbacks) or ()))
        return Workflow.apply_async(flow, args, kwargs, route_name, **options)

    def stamp(self, visitor: Any = None, append_stamps: bool = False, **headers: Any) -> None:
        """Stamp every task of the chain and its links (``on_chain_start`` / ``on_chain_end``)."""
        hooks = ("on_chain_start", "on_chain_end")
        self._stamp_members(visitor, append_stamps, headers, hooks, self._signatures())

    def unchain_tasks(self) -> list[Any]:
        """The chain's tasks as separate signatures (copies): the last one carries the chain's
        callbacks, each carries its errbacks."""
        members = [member.clone() for member in self._signatures()]
        for callback in maybe_list(self.options.get("link")) or ():
            if members:
                members[-1].link(callback)
        for errback in maybe_list(self.options.get("link_error")) or ():
            for member in members:
                member.link_error(errback)
        return members

    def freeze(self, _id: str | None = None, **kwargs: Any) -> Any:
        """Fix every task's id now (the last one's ``_id`` when given) and return the result
        the chain gives when sent: its last task's, each result the previous one's parent.
        As Celery's, the chain's own ``id`` becomes ``_id`` (None when not given)."""
        members = self._signatures()
        if not members:
            return super().freeze(_id)
        self.options["task_id"] = _id
        result = None
        for position, member in enumerate(members):
            frozen = member.freeze(_id if position == len(members) - 1 else None)
            if result is not None:
                eldest(frozen).parent = result
            result = frozen
        return result

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        """Run the chain here, each task after the other (eager mode): each step's result has
        the step before as its ``parent``. A step may be a group (its result a GroupResult, its
        value the list of its members'). As in Celery, the next step reads its predecessor's
        value with ``get()``: a failure before the last step raises here."""
        result = None
        previous: tuple[Any, ...] = tuple(args or ())
        for task in self.tasks:
            if result is not None:
                previous = (result.get(disable_sync_subtasks=False),)
            step = task if isinstance(task, Workflow) else maybe_signature(task)
            parent, result = result, step.apply(previous)
            if parent is not None:
                result.parent = parent
        return result
