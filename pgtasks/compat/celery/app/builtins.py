"""Celery's ``celery.app.builtins``: the tasks every app registers when it is finalized, under
Celery's names, each doing what Celery's does when called or sent by name:

- ``celery.map`` / ``celery.starmap`` (``xmap``, ``xstarmap``): call a task on each item, here;
- ``celery.chunks``: send a ``chunks`` (a group of ``celery.starmap``); its GroupResult;
- ``celery.group`` / ``celery.chord``: Celery's old way of sending a group or a chord (the
  shapes Celery passes them); ``celery.chain`` is not a task and raises NotImplementedError;
- ``celery.chord_unlock``: joins a group and sends a callback with its results, retrying
  every ``interval`` until the group is ready. pgtasks never sends it (the database releases
  a chord's body when its header ends); it exists for code that sends it by hand;
- ``celery.accumulate``: its arguments (the body that gives a replacing group's results);
- ``celery.backend_cleanup``, which django-celery-beat schedules daily: deletes the results
  past ``result_expires`` now (pgtasks' retention, which workers also run every minute).

``pgtasks.call_errback`` (see bridge/planning.py) is pgtasks' own: registered with the engine
only, so ``app.tasks`` lists Celery's names alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.registration import make_task
from pgtasks.compat.celery.app.task import Context, Task
from pgtasks.compat.celery.canvas.chord import chord as chord_type
from pgtasks.compat.celery.canvas.group import group as group_type
from pgtasks.compat.celery.canvas.mapping import chunks as chunks_type
from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature
from pgtasks.compat.celery.exceptions import ChordError
from pgtasks.compat.celery.result.async_result import result_from_tuple

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["register_builtins"]

CALL_ERRBACK = "pgtasks.call_errback"


def register_builtins(app: Celery) -> None:
    """Register the built-in tasks with ``app`` (when it is finalized)."""

    def task_of(task: Any) -> Any:
        """The task object a ``celery.map`` names: by name (pgtasks' messages) or as a
        signature (Celery's, whose arguments are not used, as in Celery)."""
        return app.tasks[task] if isinstance(task, str) else Signature(dict(task), app=app).type

    @app.task(name="celery.map", shared=False, lazy=False)
    def xmap(task: Any, it: list[Any]) -> list[Any]:
        fn = task_of(task)
        return [fn(item) for item in it]

    @app.task(name="celery.starmap", shared=False, lazy=False)
    def xstarmap(task: Any, it: list[Any]) -> list[Any]:
        fn = task_of(task)
        return [fn(*item) for item in it]

    @app.task(name="celery.chunks", shared=False, lazy=False)
    def chunks(task: Any, it: list[Any], n: int) -> Any:
        """Send ``task`` over ``it`` in chunks of ``n``: the chunks' GroupResult."""
        return chunks_type(maybe_signature(task, app=app), it, n, app=app)()

    @app.task(name="celery.accumulate", shared=False, lazy=False)
    def accumulate(*args: Any, index: int | None = None) -> Any:
        """Celery's accumulate: its arguments (or one of them); a replacing group's body."""
        return args[index] if index is not None else args

    @app.task(name="celery.group", bind=True, shared=False, lazy=False)
    def group(
        self: Task,
        tasks: list[Any],
        result: Any,
        group_id: str,
        partial_args: Any = (),
        add_to_parent: bool = True,
    ) -> Any:
        """Send each of ``tasks`` (``partial_args`` first) as members of ``group_id``; return
        ``result`` (a GroupResult's ``as_tuple()``) as the GroupResult it describes."""
        for member in tasks:
            signature = maybe_signature(member, app=app)
            signature.clone(tuple(partial_args or ())).apply_async(group_id=group_id)
        return result_from_tuple(result, app)

    @app.task(name="celery.chain", shared=False, lazy=False)
    def chain(*args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("chain is not a real task")

    @app.task(name="celery.chord", bind=True, ignore_result=False, shared=False, lazy=False)
    def chord(
        self: Task,
        header: Any,
        body: Any,
        partial_args: Any = (),
        interval: float | None = None,
        countdown: float = 1,
        max_retries: int | None = None,
        eager: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Send ``header`` (a group, or a list of signatures) with ``body`` waiting for it:
        the body's AsyncResult."""
        if isinstance(header, dict):
            header = maybe_signature(header, app=app)
        members = header.tasks if isinstance(header, group_type) else header
        header = group_type([maybe_signature(s, app=app) for s in members], app=app)
        body = maybe_signature(body, app=app)
        flow = chord_type(header, body, app=app)
        return flow.run(header, body, partial_args, app, interval, countdown, max_retries, **kwargs)

    @app.task(
        name="celery.chord_unlock",
        bind=True,
        max_retries=None,
        ignore_result=True,
        shared=False,
        lazy=False,
        default_retry_delay=app.conf.result_chord_retry_interval,
    )
    def unlock_chord(
        self: Task,
        group_id: str,
        callback: Any,
        interval: float | None = None,
        max_retries: int | None = None,
        result: Any = None,
        **kwargs: Any,
    ) -> None:
        """Wait for the group ``group_id`` (its members ``result``, as ``as_tuple()`` forms)
        by retrying every ``interval`` seconds; then send ``callback`` with its results, or
        fail the callback with ChordError naming the member that failed."""
        join_and_send(self, group_id, callback, interval, max_retries, result or ())

    @app.task(name="celery.backend_cleanup", shared=False, lazy=False)
    def backend_cleanup() -> None:
        app.backend.cleanup()

    def call_errback(task_id: str, errback: dict[str, Any]) -> None:
        """Call ``errback`` with ``(request, exc, None)`` for task ``task_id``, which failed
        without running (a chord body whose header failed), as Celery calls it from the
        worker that saw the failure: the request is the failed task's, ``exc`` its error."""
        failed = app.AsyncResult(task_id)
        request = Context(
            id=task_id,
            task=failed.name,
            args=failed.args or [],
            kwargs=failed.kwargs or {},
            errbacks=[errback],
            delivery_info={},
        )
        Signature(dict(errback), app=app)(request, failed.result, None)

    app._define(make_task(call_errback, app, app.task_cls, CALL_ERRBACK, False))


def join_and_send(
    task: Task, group_id: str, callback: Any, interval: float | None, max_retries: int | None, members: Any
) -> None:
    """``celery.chord_unlock``'s body (see :func:`register_builtins`)."""
    app = task.app
    deps = app.GroupResult(group_id, [result_from_tuple(r, app=app) for r in members])
    callback = maybe_signature(callback, app=app)
    if not deps.ready():
        delay = interval if interval is not None else task.default_retry_delay
        raise task.retry(countdown=delay, max_retries=max_retries)
    try:
        values = deps.join(
            timeout=app.conf.result_chord_join_timeout, propagate=True, disable_sync_subtasks=False
        )
    except Exception as exc:
        culprit = next((r for r in deps.results if r.failed()), None)
        reason = f"Dependency {culprit.id} raised {exc!r}" if culprit is not None else repr(exc)
        if callback.id:
            app.backend.mark_as_failure(callback.id, ChordError(reason))
        return
    callback.delay(values)
