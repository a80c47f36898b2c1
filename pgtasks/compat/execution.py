"""Running a Celery task's body: hooks, signals and outcomes, as Celery's tracer does.

:func:`trace` runs one attempt and reports its Celery state; it serves both the worker (through
:func:`worker_entry`, the function registered with the engine) and ``apply()`` / eager mode.
In a worker the state becomes the engine's outcome: SUCCESS returns the value, RETRY raises
:class:`~pgtasks.engine.errors.RetryRequested` (the engine re-runs the task under the same id
with ``retries + 1``), FAILURE re-raises the task's exception so its type is recorded.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgtasks.compat import app_trace, django_support, signals, states
from pgtasks.compat.exceptions import Ignore, Reject, Replaced, Retry
from pgtasks.compat.request import Context, executing, request_from_record
from pgtasks.compat.signatures import Signature
from pgtasks.engine.context import running_context
from pgtasks.engine.errors import RetryRequested, TaskAbandoned
from pgtasks.engine.execution import run_coroutine

if TYPE_CHECKING:
    from pgtasks.compat.task import Task

log = logging.getLogger("pgtasks.compat")


class ExceptionInfo:
    """Celery's ``einfo``: the exception, its type and its formatted traceback."""

    def __init__(self, exc: BaseException) -> None:
        self.exception = exc
        self.type = type(exc)
        self.tb = exc.__traceback__
        self.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.internal = False

    def __str__(self) -> str:
        return self.traceback

    def __repr__(self) -> str:
        return f"<ExceptionInfo: {self.exception!r}>"


@dataclass
class Attempt:
    """How one run of a task ended: Celery state, value (or exception) and einfo."""

    state: str
    retval: Any
    einfo: ExceptionInfo | None = None


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


def trace(task: Task, request: Context, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Attempt:
    """Run the task once with ``request`` current, calling hooks and sending signals in
    Celery's order: task_prerun, before_start, the body, on_success/task_success (or
    on_failure/task_failure, or on_retry/task_retry), after_return, task_postrun."""
    task_id = request.id
    if task_id is None:
        raise ValueError(f"cannot run task {task.name!r}: its request has no task id")
    with executing(task, request):
        signals.task_prerun.send(sender=task, task_id=task_id, task=task, args=args, kwargs=kwargs)
        attempt: Attempt
        try:
            task.before_start(task_id, args, kwargs)
            retval = task(*args, **kwargs) if _custom_call(task) else task.run(*args, **kwargs)
            if inspect.isawaitable(retval):  # an async def task: run here, inside the hooks
                retval = run_coroutine(retval)
            pending = getattr(request, "_pending_retry", None)
            if pending is not None:  # self.retry(throw=False) asked for a retry, then returned
                raise pending
        except Reject as exc:
            attempt = Attempt(states.REJECTED, exc, ExceptionInfo(exc))
            signals.task_rejected.send(sender=task, message=None, exc=exc)
        except Ignore as exc:
            attempt = Attempt(states.IGNORED, exc, ExceptionInfo(exc))
        except Retry as exc:
            einfo = ExceptionInfo(exc)
            attempt = Attempt(states.RETRY, exc, einfo)
            _call_hook(task.on_retry, exc.exc, task_id, args, kwargs, einfo)
            signals.task_retry.send(sender=task, request=request, reason=exc, einfo=einfo)
        except Exception as exc:
            einfo = ExceptionInfo(exc)
            attempt = Attempt(states.FAILURE, exc, einfo)
            _call_hook(task.on_failure, exc, task_id, args, kwargs, einfo)
            signals.task_failure.send(
                sender=task,
                task_id=task_id,
                exception=exc,
                args=args,
                kwargs=kwargs,
                traceback=exc.__traceback__,
                einfo=einfo,
            )
            _call_errbacks(task, request, exc)
        else:
            attempt = Attempt(states.SUCCESS, retval)
            _call_hook(task.on_success, retval, task_id, args, kwargs)
            signals.task_success.send(sender=task, result=retval)
        if attempt.state not in (states.IGNORED, states.REJECTED):
            _call_hook(task.after_return, attempt.state, attempt.retval, task_id, args, kwargs, attempt.einfo)
        signals.task_postrun.send(
            sender=task,
            task_id=task_id,
            task=task,
            args=args,
            kwargs=kwargs,
            retval=attempt.retval,
            state=attempt.state,
        )
    return attempt


def _call_errbacks(task: Task, request: Context, exc: BaseException) -> None:
    """Errbacks that take ``(request, exc, traceback)`` run here, in the failing worker, as
    Celery runs them; one that raises is logged and the others still run."""
    for errback in request.errbacks or ():
        try:
            Signature(dict(errback), app=task.app)(request, exc, exc.__traceback__)
        except Exception:
            log.exception("errback %s of task %s[%s] raised", errback.get("task"), task.name, request.id)


def _custom_call(task: Task) -> bool:
    """Celery calls ``task.__call__`` instead of ``run`` when a base class overrides it."""
    return task.overrides_call()


def _call_hook(hook: Callable[..., Any], *args: Any) -> None:
    """A handler that raises is logged; the task's outcome stands (Celery logs it too)."""
    try:
        hook(*args)
    except Exception:
        log.exception("task hook %s raised", getattr(hook, "__name__", hook))


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
        django_support.close_old_connections()
        try:
            # Through the module attribute at every run: instrumentation that wraps
            # celery.app.trace.build_tracer (sentry-sdk) sees each task, as on Celery.
            tracer = app_trace.build_tracer(str(task.name), task, hostname=ctx.executor_id, app=task.app)
            attempt = tracer(request.id, tuple(args), dict(kwargs), request.as_dict()).info
        finally:
            django_support.close_old_connections()
        return outcome_of(attempt)

    run_in_worker.__pgtasks_compat_task__ = task  # type: ignore[attr-defined]
    return run_in_worker


def _new_arguments(retry: Retry) -> tuple[Any, Any]:
    """The arguments ``self.retry(args=, kwargs=)`` gave (the old ones when not given)."""
    sig = retry.sig
    if isinstance(sig, tuple) and len(sig) >= 2:
        return tuple(sig[0]), dict(sig[1])
    return None, None


def outcome_of(attempt: Attempt) -> Any:
    """Return the value, or raise what makes the engine record the Celery outcome."""
    if attempt.state == states.SUCCESS:
        return attempt.retval
    if attempt.state == states.RETRY:
        retry: Retry = attempt.retval
        reason = retry.exc if isinstance(retry.exc, BaseException) else None
        new_args, new_kwargs = _new_arguments(retry)
        raise RetryRequested(
            str(retry), countdown=retry_countdown(retry), reason=reason, args=new_args, kwargs=new_kwargs
        ) from retry
    if attempt.state == states.IGNORED and isinstance(attempt.retval, Replaced):
        # The task waits for its replacement (the same transaction as the replacement's
        # insert made it WAITING): the worker writes nothing for it.
        raise TaskAbandoned(f"task replaced: {attempt.retval}")
    if attempt.state == states.IGNORED:
        # Celery records nothing for an ignored task; the engine must record an outcome, so
        # the task ends SUCCESS with None (an engine hook for "no outcome" is phase 2).
        return None
    if attempt.state == states.REJECTED and getattr(attempt.retval, "requeue", False):
        raise RetryRequested("rejected with requeue=True", countdown=0.0) from attempt.retval
    exc: BaseException = attempt.retval
    raise exc.with_traceback(attempt.einfo.tb if attempt.einfo else None)
