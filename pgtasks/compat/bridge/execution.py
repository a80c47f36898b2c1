"""Running a Celery task's body once: hooks and signals in Celery's order, and the Celery state
it ended in (an :class:`Attempt`).

:func:`trace` serves the worker (through ``celery.app.trace.build_tracer``, which the worker
entry calls: worker_entry.py) and ``apply()`` / eager mode (eager.py).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgtasks.compat.billiard.einfo import ExceptionInfo
from pgtasks.compat.bridge.chain_requests import links_of, stop_cleared_links
from pgtasks.compat.celery import signals, states
from pgtasks.compat.celery._state import executing
from pgtasks.compat.celery.canvas.signature import Signature
from pgtasks.compat.celery.exceptions import Ignore, Reject, Retry
from pgtasks.compat.celery.result.base import ResultBase
from pgtasks.compat.kombu.exceptions import EncodeError
from pgtasks.engine.context import running_context
from pgtasks.engine.errors import PgtasksError, TaskAbandoned, TaskReleased, TaskSuspended
from pgtasks.engine.execution import run_coroutine
from pgtasks.engine.failures import mark_expected
from pgtasks.engine.forks import exit_if_forked_copy

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Context, Task

log = logging.getLogger("pgtasks.compat")


@dataclass
class Attempt:
    """How one run of a task ended: Celery state, value (or exception) and einfo."""

    state: str
    retval: Any
    einfo: ExceptionInfo | None = None


def trace(
    task: Task, request: Context, args: tuple[Any, ...], kwargs: dict[str, Any], propagate: bool = False
) -> Attempt:
    """Run the task once with ``request`` current, calling hooks and sending signals in
    Celery's order: task_prerun, before_start, the body, on_success/task_success (or
    on_failure/task_failure, or on_retry/task_retry), after_return (not after a retry, an
    ignore or a reject), task_postrun; the app loader's ``on_task_init`` first and, in a
    worker, its ``on_process_cleanup`` last. An error raised around the body (by the loader's
    ``on_task_init``) sends task_internal_error and propagates, as in Celery. ``propagate``
    (eager mode with ``task_eager_propagates``): a failure or a retry of the body is raised
    as Celery's eager tracer raises it, before any failure or retry handler, errback or
    after_return runs (task_postrun gets state None, then task_internal_error is sent)."""
    task_id = request.id
    if task_id is None:
        raise ValueError(f"cannot run task {task.name!r}: its request has no task id")
    try:
        attempt = _run(task, request, task_id, args, kwargs, propagate)
    except Reject:
        raise
    except Exception as exc:  # raised around the body (a loader hook): Celery's internal error
        signals.task_internal_error.send(
            sender=task,
            task_id=task_id,
            args=args,
            kwargs=kwargs,
            request=request,
            exception=exc,
            traceback=exc.__traceback__,
            einfo=ExceptionInfo(exc),
        )
        raise
    if not request.is_eager:
        _call_hook(task.app.loader.on_process_cleanup)
    return attempt


def _run(
    task: Task,
    request: Context,
    task_id: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    propagate: bool,
) -> Attempt:
    loader = task.app.loader
    started = time.monotonic()
    with executing(task, request):
        loader.on_task_init(task_id, task)
        signals.task_prerun.send(sender=task, task_id=task_id, task=task, args=args, kwargs=kwargs)
        attempt: Attempt
        pid = os.getpid()
        started_with = links_of(request)
        try:
            task.before_start(task_id, args, kwargs)
            retval = task(*args, **kwargs) if _custom_call(task) else task.run(*args, **kwargs)
            if inspect.isawaitable(retval):  # an async def task: run here, inside the hooks
                retval = run_coroutine(retval)
            exit_if_forked_copy(pid, task_id, "task")  # before any handler runs in the copy
            if not request.is_eager:  # stored before on_success runs, as Celery's backend does
                _check_encodable(task, retval)
        except (TaskAbandoned, TaskReleased, TaskSuspended, asyncio.CancelledError):
            raise  # the engine's own ends of a run (cancelled, given back, suspended, cut off)
        except Exception as exc:
            exit_if_forked_copy(pid, task_id, "task", exc)
            if propagate and not isinstance(exc, (Reject, Ignore)):
                signals.task_postrun.send(
                    sender=task, task_id=task_id, task=task, args=args, kwargs=kwargs, retval=None, state=None
                )
                raise
            attempt = _failed(task, request, task_id, args, kwargs, exc)
            if attempt.state == states.RETRY and not request.is_eager:
                stop_cleared_links(task, request, started_with)  # Celery resends what is left
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, a BaseException of the task's own
            exit_if_forked_copy(pid, task_id, "task", exc)
            if not request.is_eager:
                # Celery's tracer raises it (no on_failure, no after_return) and its worker
                # records the failure: task_failure, the errbacks, task_postrun with no state.
                # Raised on, the engine records it; eagerly it reaches the caller, as in Celery.
                einfo = ExceptionInfo(exc)
                _send_task_failure(task, task_id, args, kwargs, exc, einfo)
                _call_errbacks(task, request, exc, einfo.traceback)
                signals.task_postrun.send(
                    sender=task, task_id=task_id, task=task, args=args, kwargs=kwargs, retval=None, state=None
                )
            raise
        else:
            attempt = Attempt(states.SUCCESS, retval)
            if not request.is_eager:
                stop_cleared_links(task, request, started_with)  # self.request.chain = None
            _call_hook(task.on_success, retval, task_id, args, kwargs)
            # runtime: seconds since the run began, as Celery's worker measures it
            signals.task_success.send(sender=task, result=retval, runtime=time.monotonic() - started)
        if attempt.state not in (states.IGNORED, states.REJECTED, states.RETRY):
            # Celery passes no einfo here, whatever the state
            _call_hook(task.after_return, attempt.state, attempt.retval, task_id, args, kwargs, None)
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


def _failed(
    task: Task, request: Context, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any], exc: Exception
) -> Attempt:
    """How a body that raised ``exc`` ended, its handlers called and its signals sent."""
    if isinstance(exc, Reject):
        einfo = ExceptionInfo(exc)
        if not exc.requeue and not request.is_eager:
            # As Celery's worker (its Issue #4222): a task rejected for good is recorded as a
            # failure, with task_failure and the errbacks (no on_failure: the tracer does not
            # call it for a Reject); task_rejected is Celery's signal for an undecodable message
            _send_task_failure(task, task_id, args, kwargs, exc, einfo)
            _call_errbacks(task, request, exc, einfo.traceback)
        return Attempt(states.REJECTED, exc, einfo)
    if isinstance(exc, Ignore):
        return Attempt(states.IGNORED, exc, ExceptionInfo(exc))
    einfo = ExceptionInfo(exc)
    if isinstance(exc, Retry):
        _call_hook(task.on_retry, exc.exc, task_id, args, kwargs, einfo)
        signals.task_retry.send(sender=task, request=request, reason=exc, einfo=einfo)
        return Attempt(states.RETRY, exc, einfo)
    if task.throws and isinstance(exc, task.throws):
        mark_expected(exc)  # logged by the worker at INFO without its traceback, as Celery's
    # Celery's order: the errbacks (its backend calls them as it stores the failure), then
    # on_failure, then task_failure
    _call_errbacks(task, request, exc, einfo.traceback)
    _call_hook(task.on_failure, exc, task_id, args, kwargs, einfo)
    _send_task_failure(task, task_id, args, kwargs, exc, einfo)
    return Attempt(states.FAILURE, exc, einfo)


def killed_at_time_limit(task: Task, request: Context, exc: BaseException) -> None:
    """What Celery's main process does for a task whose process it killed at its hard time
    limit, which the child could not: the errbacks that take the request (its backend calls
    them as it stores the failure), ``task_failure``, then ``task_postrun`` with no state. No
    ``on_failure`` or ``after_return``: those belong to the dead child, as in Celery."""
    einfo = ExceptionInfo(exc)
    args, kwargs = tuple(request.args or ()), dict(request.kwargs or {})
    _call_errbacks(task, request, exc, einfo.traceback)
    _send_task_failure(task, str(request.id), args, kwargs, exc, einfo)
    signals.task_postrun.send(
        sender=task, task_id=request.id, task=task, args=args, kwargs=kwargs, retval=None, state=None
    )


def _send_task_failure(
    task: Task,
    task_id: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: BaseException,
    einfo: ExceptionInfo,
) -> None:
    signals.task_failure.send(
        sender=task,
        task_id=task_id,
        exception=exc,
        args=args,
        kwargs=kwargs,
        traceback=exc.__traceback__,
        einfo=einfo,
    )


def _check_encodable(task: Task, value: Any) -> None:
    """Raise kombu's EncodeError (the task fails, as on Celery) when the worker could not
    store ``value`` with the task's serializer: Celery stores the result before on_success
    runs, and a value it cannot encode fails the task instead."""
    if value is None or isinstance(value, (bool, int, str, ResultBase)):
        return  # what every serializer takes; a result handle is stored as its tuple
    ctx = running_context()
    if ctx is None:
        return
    try:
        task.app.engine.codec.dumps(value, f"return value of task {task.name!r}", ctx.record.serialization)
    except PgtasksError as exc:
        raise EncodeError(str(exc)) from exc


def _call_errbacks(task: Task, request: Context, exc: BaseException, traceback: str) -> None:
    """Errbacks that take ``(request, exc, traceback)`` run here, in the failing worker, as
    Celery runs them (``traceback``: the formatted text, as Celery's backend passes it); one
    that raises is logged and the others still run."""
    for errback in request.errbacks or ():
        try:
            Signature(dict(errback), app=task.app)(request, exc, traceback)
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
