"""Sending a task the Celery way: one prepared task inserted through the engine, or, with
callbacks or stored metadata, a canvas planned and inserted in one transaction."""

from __future__ import annotations

import asyncio
import functools
import uuid
from typing import TYPE_CHECKING, Any

from pgtasks.compat.planning import send_canvas
from pgtasks.compat.publishing import prepare
from pgtasks.compat.result import AsyncResult
from pgtasks.compat.signatures import Signature
from pgtasks.engine.core import is_async_connection
from pgtasks.engine.errors import ConfigurationError

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery


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
    ``time_limit`` or ``soft_time_limit``, which are stored with it (its ``meta``)."""
    if link is not None or link_error is not None or _needs_meta(options):
        if options.get("conn") is not None:
            raise _no_canvas_on(name)
        sig = Signature(task if task is not None else name, args, kwargs, dict(options), app=app)
        sig.options["task_id"] = task_id or str(uuid.uuid4())
        for callback in _as_list(link):
            sig.link(callback)
        for errback in _as_list(link_error):
            sig.link_error(errback)
        result = send_canvas(app, sig)
        if not isinstance(result, AsyncResult):  # one signature plans to one task
            raise TypeError(f"sending {name!r} gave {result!r}, not an AsyncResult")
        return result
    prepared = prepare(app, name, args, kwargs, task=task, task_id=task_id, **options)
    prepared.publish(after=False)
    request = prepared.request
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
    [sent] = await app.engine.enqueue_async(
        [prepared.request], conn=conn, on_duplicate=options.get("on_duplicate", "raise")
    )
    prepared.publish(after=True)
    return app.AsyncResult(sent, task_name=name)


def _no_canvas_on(name: str) -> ConfigurationError:
    return ConfigurationError(f"apply_async(conn=...) of {name!r} cannot carry link, link_error or headers")


def _needs_meta(options: dict[str, Any]) -> bool:
    return any(options.get(key) for key in ("headers", "time_limit", "soft_time_limit"))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
