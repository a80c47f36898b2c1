"""Celery's ``celery.app.registry``: :class:`TaskRegistry`, ``app.tasks``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pgtasks.compat.celery.exceptions import NotRegistered

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Task

__all__ = ["TaskRegistry"]


class TaskRegistry(dict):  # type: ignore[type-arg]
    """``app.tasks``: tasks by name; a missing name raises NotRegistered (a KeyError)."""

    def __missing__(self, key: str) -> Task:
        raise NotRegistered(key)

    def register(self, task: Task) -> None:
        self[task.name] = task

    def unregister(self, name: str | Task) -> None:
        key = name if isinstance(name, str) else str(name.name)
        try:
            self.pop(key)
        except KeyError:
            raise NotRegistered(key) from None

    def regular(self) -> dict[str, Task]:
        return dict(self)

    def periodic(self) -> dict[str, Task]:
        return {}
