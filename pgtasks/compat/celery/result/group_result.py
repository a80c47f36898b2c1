"""Celery's ``celery.result.GroupResult``: the result of a ``group``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery._state import get_current_app
from pgtasks.compat.celery.exceptions import ChordError
from pgtasks.compat.celery.result.async_result import ancestors, raise_failed
from pgtasks.compat.celery.result.base import picklable_class
from pgtasks.compat.celery.result.result_set import ResultSet

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["GroupResult"]


class GroupResult(ResultSet):
    """The result of a ``group``: its ``id`` and its members. ``save()`` is a no-op (a sent
    group is stored with its tasks); ``GroupResult.restore(id)`` reads it back."""

    def __init__(self, id: str | None = None, results: Any = None, parent: Any = None, **kwargs: Any) -> None:
        super().__init__(results, **kwargs)
        self.id = id
        self.parent = parent

    def save(self, backend: Any = None) -> GroupResult:
        """Store the group in the backend (a group sent through pgtasks is stored with its
        tasks already; saving one built by hand makes :meth:`restore` find it)."""
        if self.id is None:
            raise ValueError("GroupResult.save() needs the group's id: GroupResult(id, results)")
        app = self.app or get_current_app()
        (backend or app.backend).save_group(self.id, self)
        return self

    def delete(self, backend: Any = None) -> None:
        """Forget a group saved by hand (task rows are the history and stay)."""
        if self.id is not None:
            app = self.app or get_current_app()
            (backend or app.backend).delete_group(self.id)

    @classmethod
    def restore(cls, id: str, backend: Any = None, app: Celery | None = None) -> GroupResult | None:
        """The group sent (or saved) with id ``id``, or None if there is none."""
        app = app or getattr(cls, "app", None) or get_current_app()
        found: GroupResult | None = (backend or app.backend).restore_group(id)
        return found

    def join(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        callback: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> list[Any]:
        """Every result, in order (:meth:`ResultSet.join`). A group sent after others (a
        chord's group body) whose member failed because a parent did raises that parent's
        error, not the member's ChordError: Celery fails each member of such a body with the
        header task's own error."""
        try:
            return super().join(timeout, propagate, interval, callback, disable_sync_subtasks, **kwargs)
        except ChordError:
            if self.parent is not None:
                raise_failed(ancestors(self.parent))
            raise

    def as_tuple(self) -> tuple[Any, ...]:
        parent = self.parent.as_tuple() if self.parent is not None else None
        return (self.id, parent), [r.as_tuple() for r in self.results]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.id} [{', '.join(r.id for r in self.results)}]>"

    def __str__(self) -> str:
        return str(self.id)

    def __bool__(self) -> bool:
        return bool(self.id or self.results)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GroupResult):
            return other.id == self.id and other.results == self.results and other.parent == self.parent
        if isinstance(other, str):
            return other == self.id
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.id)

    def __reduce__(self) -> tuple[Any, ...]:
        return picklable_class(type(self)), (self.id, self.results, self.parent)
