"""Sending a task the Celery way (``Task.apply_async``, ``app.send_task``): one prepared task
inserted through the engine, or, with callbacks or stored metadata, a canvas planned and
inserted in one transaction (planning.py)."""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.planning import send_canvas
from pgtasks.compat.bridge.publishing import check_argument_types, message_properties, prepare
from pgtasks.compat.bridge.send_errors import sending
from pgtasks.compat.celery.canvas.signature import Signature
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.utils.functional import maybe_list
from pgtasks.engine.core import is_async_connection
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.ids import new_task_id

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.app.task import Task


def send_task(
    app: Celery,
    name: str,
    args: Any = None,
    kwargs: Any = None,
    *,
    task: Any = None,
    task_id: str | None = None,
    link: Any = None,
    link_error: Any = None,
    **options: Any,
) -> AsyncResult:
    """Route and insert one task; return its AsyncResult. With ``link`` or ``link_error`` the
    task and its callbacks are one canvas (see planning.py); so is a task with ``headers``,
    ``time_limit``, ``soft_time_limit`` or message properties, which are stored with it (its
    ``meta``). An unreachable database raises kombu's ``OperationalError`` (send_errors.py)."""
    if link is not None or link_error is not None or _needs_meta(options):
        if options.get("conn") is not None:
            raise _no_canvas_on(name)
        sig = Signature(task if task is not None else name, args, kwargs, dict(options), app=app)
        sig.options["task_id"] = task_id or new_task_id()
        for callback in maybe_list(link) or ():
            sig.link(callback)
        for errback in maybe_list(link_error) or ():
            sig.link_error(errback)
        result = send_canvas(app, sig)
        if not isinstance(result, AsyncResult):  # one signature plans to one task
            raise TypeError(f"sending {name!r} gave {result!r}, not an AsyncResult")
        return result
    prepared = prepare(app, name, args, kwargs, task=task, task_id=task_id, **options)
    prepared.publish(after=False)
    request = prepared.request
    with sending():  # (send_canvas, above, turns the error the same way)
        [sent] = app.engine.enqueue(
            [request], conn=options.get("conn"), on_duplicate=options.get("on_duplicate", "raise")
        )
    prepared.publish(after=True)
    return app.AsyncResult(sent, task_name=name)


async def send_task_async(
    app: Celery,
    name: str,
    args: Any = None,
    kwargs: Any = None,
    *,
    task: Any = None,
    task_id: str | None = None,
    link: Any = None,
    link_error: Any = None,
    **options: Any,
) -> AsyncResult:
    """:func:`send_task` for async code. With ``conn=`` a ``psycopg.AsyncConnection`` the task
    is inserted on it (in its transaction); otherwise the send runs on a thread."""
    conn = options.get("conn")
    if conn is None or not is_async_connection(conn):
        send = functools.partial(
            send_task, app, name, args, kwargs, task=task, task_id=task_id, link=link, link_error=link_error
        )
        return await asyncio.to_thread(send, **options)
    if link is not None or link_error is not None or _needs_meta(options):
        raise _no_canvas_on(name)
    prepared = prepare(app, name, args, kwargs, task=task, task_id=task_id, **options)
    prepared.publish(after=False)
    with sending():
        [sent] = await app.engine.enqueue_async(
            [prepared.request], conn=conn, on_duplicate=options.get("on_duplicate", "raise")
        )
    prepared.publish(after=True)
    return app.AsyncResult(sent, task_name=name)


def _no_canvas_on(name: str) -> ConfigurationError:
    return ConfigurationError(
        f"apply_async(conn=...) of {name!r} cannot carry link, link_error, headers or message properties"
    )


def _needs_meta(options: dict[str, Any]) -> bool:
    """Options stored with the task (its ``meta``). ``ignore_result`` is, unless the task is
    inserted on the caller's connection (``conn=``): then its outcome reads as stored."""
    stored = ("headers", "time_limit", "soft_time_limit", "stamped_headers")
    shown = ("argsrepr", "kwargsrepr", "shadow")  # how logs and monitoring show the task
    return (
        any(options.get(key) for key in stored)
        or any(options.get(key) is not None for key in shown)  # '' too: it hides the arguments
        or bool(message_properties(options))
        or (bool(options.get("ignore_result")) and options.get("conn") is None)
    )


# -- Task.apply_async ------------------------------------------------------------------------
def check_call(task: Task, args: Any, kwargs: Any) -> None:
    """As Celery, before a task is sent or applied: ValueError when its soft time limit is
    above its hard one; TypeError when its body cannot take these arguments."""
    if task.soft_time_limit and task.time_limit and task.soft_time_limit > task.time_limit:
        raise ValueError("soft_time_limit must be less than or equal to time_limit")
    check_argument_types(task.name or "", args, kwargs)  # before they are unpacked below
    task.check_arguments(*(args or ()), **(kwargs or {}))


def _task_options(
    task: Task, task_id: str | None, link: Any, link_error: Any, options: dict[str, Any]
) -> dict[str, Any]:
    """The keyword arguments of send_task for ``task``: the options, with its queue, priority
    and expiry where not given."""
    defaults = {
        "queue": task.queue,
        "priority": task.priority or None,  # as Celery's ``if self.priority``: 0 gives way
        "expires": task.expires,
        "ignore_result": _ignores_result(task, {}) or None,
    }
    given = {k: v for k, v in defaults.items() if v is not None}
    return {"task_id": task_id, "link": link, "link_error": link_error, **given, **options}


def handed_back(sent: AsyncResult, result_cls: Any, options: dict[str, Any]) -> AsyncResult:
    """The handle a send returns: of ``result_cls`` when given (``apply_async`` gives the task's
    own, ``AbortableTask``'s), marked ignored when the send's ``ignore_result`` is (``get()``
    then returns None at once), as Celery's send_task hands it back."""
    result: AsyncResult = sent if result_cls is None else result_cls(sent.id)
    if options.get("ignore_result"):
        result.ignored = True
    return result


def _ignores_result(task: Task, options: dict[str, Any]) -> bool:
    """The call's ``ignore_result``, else the task's, else the app's ``task_ignore_result``."""
    for choice in (options.get("ignore_result"), task.ignore_result):
        if choice is not None:
            return bool(choice)
    return flag("task_ignore_result", task.app.conf.task_ignore_result)


def send_for_task(
    task: Task,
    args: Any,
    kwargs: Any,
    task_id: str | None,
    link: Any,
    link_error: Any,
    options: dict[str, Any],
) -> AsyncResult:
    """``task.apply_async(...)`` once checked and not eager: sent through ``app.send_task``, as
    Celery sends it, so that an app class overriding send_task sees every send (an outbox
    library keeps the task in its own table until the transaction commits) and so does a test
    patching it."""
    sending = _task_options(task, task_id, link, link_error, options)
    result: AsyncResult = task.app.send_task(
        task.name or "", args, kwargs, task_type=task, result_cls=task.AsyncResult, **sending
    )
    return result


async def send_for_task_async(
    task: Task,
    args: Any,
    kwargs: Any,
    task_id: str | None,
    link: Any,
    link_error: Any,
    options: dict[str, Any],
) -> AsyncResult:
    """``task.apply_async_async(...)``: on ``conn=`` a ``psycopg.AsyncConnection``, the task is
    inserted in its transaction; anything else (eager mode, callbacks) runs apply_async on a
    thread."""
    conn = options.get("conn")
    if conn is None or not is_async_connection(conn) or task.app.conf.task_always_eager:
        send = functools.partial(task.apply_async, args, kwargs, task_id=task_id)
        return await asyncio.to_thread(send, link=link, link_error=link_error, **options)
    check_call(task, args, kwargs)
    sending = _task_options(task, task_id, link, link_error, options)
    result = await send_task_async(task.app, task.name or "", args, kwargs, task=task, **sending)
    return handed_back(result, task.AsyncResult, sending)
