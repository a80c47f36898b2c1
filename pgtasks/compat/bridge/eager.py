"""``Task.apply()`` and ``task_always_eager``: run a task in this process, now (what
``app.apply_eagerly`` does for ``Task.apply``).

Retries run at once with ``retries + 1`` until the task succeeds, fails or reaches
``max_retries`` (then MaxRetriesExceededError, or the retry's own exception), as in Celery.
With ``throw`` (default: ``task_eager_propagates``) a failure raises here, and so does a
retry's :class:`~celery.exceptions.Retry` (the task ran once, as Celery's eager tracer
propagates it); otherwise the EagerResult holds the outcome. With ``task_store_eager_result``
the outcome is also stored in the database under the task's id, as a worker's is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.execution import trace
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.requests import eager_request
from pgtasks.compat.celery import states
from pgtasks.compat.celery.canvas.signature import maybe_signature, takes_request
from pgtasks.compat.celery.exceptions import Retry
from pgtasks.compat.celery.result.eager_result import EagerResult
from pgtasks.compat.celery.utils.functional import maybe_list
from pgtasks.engine.ids import new_task_id

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Task


def apply_eagerly(
    task: Task,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    task_id: str | None = None,
    retries: int = 0,
    throw: bool | None = None,
    headers: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    link: Any = None,
    link_error: Any = None,
) -> EagerResult:
    """Run ``task`` here with an eager request; return its EagerResult. As Celery's tracer
    does: callbacks (``link``) are sent with the result once it succeeded, errbacks
    (``link_error``) that take ``(request, exc, traceback)`` are called here when it fails and
    the others are sent with its id (sent: run here too under ``task_always_eager``)."""
    task_id = task_id or new_task_id()
    callbacks = [maybe_signature(c, app=task.app) for c in maybe_list(link) or ()]
    errbacks = [maybe_signature(e, app=task.app) for e in maybe_list(link_error) or ()]
    in_process = [e for e in errbacks if takes_request(e)]
    options = dict(options or {})
    if headers:
        options["headers"] = headers
    if throw is None:
        throw = flag("task_eager_propagates", task.app.conf.task_eager_propagates)
    while True:
        request = eager_request(task_id, task.name or "", args, kwargs, retries, options)
        if in_process:
            request.errbacks = [dict(e) for e in in_process]
        # throw: a failure or a retry is raised from the tracer, before any handler runs
        attempt = trace(task, request, args, kwargs, propagate=throw)
        retval = attempt.retval
        if attempt.state == states.RETRY and isinstance(retval, Retry) and retval.sig is not None:
            new_args, new_kwargs, _ = retval.sig
            args, kwargs, retries = tuple(new_args), dict(new_kwargs), retries + 1
            continue
        break
    if attempt.state in (states.SUCCESS, states.FAILURE) and _stores_eager_result(task):
        traceback = attempt.einfo.traceback if attempt.einfo else None
        task.app.backend.store_result(task_id, retval, attempt.state, traceback=traceback, request=request)
    if attempt.state == states.SUCCESS:
        for callback in callbacks:
            callback.apply_async((retval,))
    elif attempt.state == states.FAILURE:
        for errback in errbacks:
            if errback not in in_process:
                errback.apply_async((task_id,))
    if throw and attempt.state == states.FAILURE and isinstance(retval, BaseException):
        raise retval
    return EagerResult(
        task_id,
        retval,  # an Ignore is the result of an ignored task, as in Celery
        attempt.state,
        traceback=attempt.einfo.traceback if attempt.einfo else None,
        name=task.name,
        app=task.app,
        args=args,
        kwargs=kwargs,
        retries=retries,
    )


def _stores_eager_result(task: Task) -> bool:
    """``task_store_eager_result`` (or the task's ``store_eager_result``): an eager task's
    outcome is stored like a worker's, so its result is read by id (not when ignored)."""
    store = task.store_eager_result
    if store is None:
        store = flag("task_store_eager_result", task.app.conf.task_store_eager_result)
    ignored = task.ignore_result
    if ignored is None:
        ignored = flag("task_ignore_result", task.app.conf.task_ignore_result)
    return bool(store) and not ignored
