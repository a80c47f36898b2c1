"""Celery's ``celery.app.builtins``: the tasks every app registers for the canvas, run by its
workers: ``celery.map`` and ``celery.starmap`` (``xmap``, ``xstarmap``, ``chunks``) and
``celery.accumulate`` (the body that gives a replacing group's results)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["register_builtins"]


def register_builtins(app: Celery) -> None:
    """Register the built-in tasks with ``app`` (when it is finalized)."""

    @app.task(name="celery.map")
    def celery_map(task: str, it: list[Any]) -> list[Any]:
        fn = app.tasks[task]
        return [fn(item) for item in it]

    @app.task(name="celery.accumulate")
    def celery_accumulate(*args: Any, index: int | None = None) -> Any:
        """Celery's accumulate: its arguments (or one of them); a replacing group's body."""
        return args[index] if index is not None else args

    @app.task(name="celery.starmap")
    def celery_starmap(task: str, it: list[Any]) -> list[Any]:
        fn = app.tasks[task]
        return [fn(*item) for item in it]
