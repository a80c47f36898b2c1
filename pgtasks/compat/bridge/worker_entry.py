"""The function the engine runs for a Celery task in a worker (:func:`worker_entry`): it builds
``self.request`` from the claimed row, runs the task through ``celery.app.trace.build_tracer``
and turns the Celery state into the engine's outcome (:func:`outcome_of`): SUCCESS returns the
value, RETRY raises :class:`~pgtasks.engine.errors.RetryRequested` (the engine re-runs the
task under the same id with ``retries + 1``), FAILURE re-raises the task's exception so its
type is recorded. A ``Retry`` the task raised itself, not through ``self.retry()``, asks for
no new run, as on Celery (see :func:`outcome_of`).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge import django_support
from pgtasks.compat.bridge.django_results import running_task_mirror
from pgtasks.compat.bridge.exception_meta import exception_to_python
from pgtasks.compat.bridge.execution import Attempt
from pgtasks.compat.bridge.publishing import check_declared
from pgtasks.compat.bridge.requests import request_from_record
from pgtasks.compat.bridge.revoked_stamps import revoked_stamps, revoking_stamp
from pgtasks.compat.celery import signals, states
from pgtasks.compat.celery.app import trace as app_trace
from pgtasks.compat.celery.exceptions import Replaced, Retry
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.result.group_result import GroupResult
from pgtasks.engine.context import running_context
from pgtasks.engine.errors import RetryRequested, TaskAbandoned
from pgtasks.engine.events import task_state
from pgtasks.engine.settings import validate_queue_name

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Task
    from pgtasks.engine.runtime import Runtime

log = logging.getLogger("pgtasks.compat")


def worker_entry(task: Task, run: Callable[..., Any]) -> Callable[..., Any]:
    """The function the engine runs for ``task`` in a worker: builds ``self.request`` from
    the claimed row, traces the body and turns the Celery state into the engine's outcome."""

    @functools.wraps(run)
    def run_in_worker(*args: Any, **kwargs: Any) -> Any:
        ctx = running_context()
        if ctx is None:  # called outside a worker: behave like calling the task
            return task(*args, **kwargs)
        request = request_from_record(ctx.record, ctx.executor_id, args, kwargs)
        for name in ("time_limit", "soft_time_limit"):  # the call's limits, else the task's
            if getattr(request, name) is None:
                setattr(request, name, getattr(task, name))
        request.timelimit = (request.time_limit, request.soft_time_limit)
        if request.stamps and revoking_stamp(request.stamps, revoked_stamps(task.app)) is not None:
            task.app.engine.admin.cancel(ctx.task_id)  # ends REVOKED; what waits on it resolves
            signals.task_revoked.send(
                sender=task, request=request, terminated=False, signum=None, expired=False
            )
            raise TaskAbandoned("revoked by its stamped headers")
        django_support.close_old_connections()
        mirror = running_task_mirror(task)
        if mirror is not None and task.track_started:
            mirror.started(request)
        try:
            # Through the module attribute at every run: instrumentation that wraps
            # celery.app.trace.build_tracer (sentry-sdk) sees each task, as on Celery.
            tracer = app_trace.build_tracer(str(task.name), task, hostname=ctx.executor_id, app=task.app)
            attempt = tracer(request.id, tuple(args), dict(kwargs), request.as_dict()).info
            if mirror is not None and attempt.state == states.RETRY:
                retry = attempt.retval
                reason = retry.exc if isinstance(retry.exc, BaseException) else retry
                mirror.retrying(request, reason, attempt.einfo.traceback if attempt.einfo else None)
        finally:
            django_support.close_old_connections()
        return outcome_of(attempt, task, ctx.task_id, task.app.engine)

    return run_in_worker


def retry_countdown(retry: Retry) -> float:
    """Seconds until the retry runs, from ``Retry.when`` (seconds or an ETA)."""
    when = retry.when
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        return max(0.0, (when - dt.datetime.now(dt.timezone.utc)).total_seconds())
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return max(0.0, float(when))
    return 0.0


def _sent_again(retry: Retry, task: Task, task_id: str) -> dict[str, Any]:
    """What ``self.retry()`` asked of the next run: the arguments given (the old ones when
    not given) and the ``queue`` and ``priority`` it goes to, as Celery sends the retry with
    them; its other options are warned of, not applied."""
    sig = retry.sig
    if not (isinstance(sig, tuple) and len(sig) >= 2):
        return {}
    options = dict(sig[2]) if len(sig) > 2 and isinstance(sig[2], dict) else {}
    moved: dict[str, Any] = {"args": tuple(sig[0]), "kwargs": dict(sig[1])}
    queue, priority = options.pop("queue", None), options.pop("priority", None)
    if queue is not None and queue != "":
        name = validate_queue_name(queue if isinstance(queue, str) else getattr(queue, "name", queue))
        check_declared(task.app, name)
        moved["queue"] = name
    if priority is not None:
        moved["priority"] = priority
    if options:
        # Celery sends the retry with them (limits, headers, an exchange); the engine's retry
        # runs the same row again, as it was sent
        log.warning(
            "task %s: self.retry(%s) is not applied by pgtasks: the retry runs with the task's "
            "limits and headers",
            task_id,
            ", ".join(f"{name}=..." for name in sorted(options)),
        )
    return moved


def outcome_of(attempt: Attempt, task: Task, task_id: str, engine: Runtime) -> Any:
    """Return the value, or raise what makes the engine record the Celery outcome."""
    if attempt.state == states.SUCCESS:
        # A result handle returned by a task is stored as its tuple, as Celery's backends do.
        retval = attempt.retval
        return retval.as_tuple() if isinstance(retval, (AsyncResult, GroupResult)) else retval
    if attempt.state == states.RETRY:
        retry: Retry = attempt.retval
        if retry.sig is None:
            _not_sent(retry, attempt, task_id)
        reason = retry.exc if isinstance(retry.exc, BaseException) else None
        moved = _sent_again(retry, task, task_id)
        raise RetryRequested(str(retry), countdown=retry_countdown(retry), reason=reason, **moved) from retry
    if attempt.state == states.IGNORED and isinstance(attempt.retval, Replaced):
        # The task waits for its replacement (the same transaction as the replacement's
        # insert made it WAITING): the worker writes nothing for it.
        raise TaskAbandoned(f"task replaced: {attempt.retval}")
    if attempt.state == states.IGNORED:
        return _ignored(task_id, engine)
    if attempt.state == states.REJECTED and getattr(attempt.retval, "requeue", False):
        # The Reject is kept as the retry's reason: the next delivery reads as redelivered.
        reject = attempt.retval
        raise RetryRequested("rejected with requeue=True", countdown=0.0, reason=reject) from reject
    exc: BaseException = attempt.retval
    raise exc.with_traceback(attempt.einfo.tb if attempt.einfo else None)


def _not_sent(retry: Retry, attempt: Attempt, task_id: str) -> None:
    """A ``Retry`` raised by the body itself (``raise Retry()``), not by ``self.retry()``:
    Celery's ``Task.retry`` sends the next run before it raises, so Celery records RETRY for
    this one and never runs the task again. Re-running it here would repeat its effects, with
    no ``max_retries`` to stop it; it runs once, as on Celery, and since a row must end, it
    fails with the ``Retry`` (its ``on_retry`` and ``task_retry`` already ran, as on Celery)."""
    log.warning(
        "task %s raised Retry itself, so it is not run again (as on Celery): raise self.retry() "
        "to retry it; it ends FAILURE",
        task_id,
    )
    raise retry.with_traceback(attempt.einfo.tb if attempt.einfo else None)


def _ignored(task_id: str, engine: Runtime) -> Any:
    """The outcome of a task that raised ``Ignore``. Celery records nothing, so what the task
    stored itself stays: the documented way to end with a state of one's own is
    ``update_state(state=FAILURE, meta={'exc_type': ..., 'exc_message': ...})`` then
    ``raise Ignore()``. The engine must record an outcome, so a FAILURE published that way
    ends the task failed with that exception, a SUCCESS ends it with its meta as the result,
    and otherwise it ends SUCCESS with None."""
    published = task_state(engine, task_id)
    if published is None:
        return None
    state, meta = published
    if state == states.SUCCESS:
        return meta
    if state == states.FAILURE:
        exc = exception_to_python(meta)
        if not isinstance(exc, BaseException):  # Celery's reader refuses it with a ValueError too
            exc = ValueError(
                f"update_state(state='FAILURE') stored a meta that is no exception (it needs "
                f"'exc_type' and 'exc_message'): {meta!r}"
            )
        raise exc
    return None
