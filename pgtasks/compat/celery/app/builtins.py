"""Celery's ``celery.app.builtins``: the tasks every app registers for the canvas, run by its
workers: ``celery.map`` and ``celery.starmap`` (``xmap``, ``xstarmap``, ``chunks``) and
``celery.accumulate`` (the body that gives a replacing group's results),
``celery.backend_cleanup``, which django-celery-beat schedules daily: it deletes the results
past ``result_expires`` now (pgtasks' retention, which workers also run every minute), and
pgtasks' own ``pgtasks.call_errback`` (see bridge/planning.py)."""

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

    @app.task(name="pgtasks.call_errback")
    def call_errback(task_id: str, errback: dict[str, Any]) -> None:
        """Call ``errback`` with ``(request, exc, None)`` for task ``task_id``, which failed
        without running (a chord body whose header failed), as Celery calls it from the
        worker that saw the failure: the request is the failed task's, ``exc`` its error."""
        # why: app.task and canvas import the app's base module, which registers these tasks
        from pgtasks.compat.celery.app.task import Context
        from pgtasks.compat.celery.canvas.signature import Signature  # why: as above

        failed = app.AsyncResult(task_id)
        request = Context(id=task_id, task=failed.name, args=failed.args or (), kwargs=failed.kwargs or {})
        Signature(dict(errback), app=app)(request, failed.result, None)

    @app.task(name="celery.starmap")
    def celery_starmap(task: str, it: list[Any]) -> list[Any]:
        fn = app.tasks[task]
        return [fn(*item) for item in it]

    @app.task(name="celery.backend_cleanup", shared=False, lazy=False)
    def backend_cleanup() -> None:
        app.backend.cleanup()
