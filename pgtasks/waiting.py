"""Durable waiting and messaging (docs/waiting.md).

Inside a task: ``pgtasks.sleep``, ``recv``, ``get_event`` wait without holding a worker slot
(the task is suspended and resumes on any worker when its time comes or what it waits for
arrives); ``send``, ``set_event``, ``write_stream`` and ``close_stream`` are steps.

From any process: ``app.send`` / ``client.send`` (``conn=`` joins the caller's transaction),
``get_event`` and ``read_stream`` (:class:`Messaging`, mixed into App and Client).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from pgtasks.engine import messaging, waiting
from pgtasks.engine.core import Engine
from pgtasks.engine.messaging import (
    close_stream,
    close_stream_async,
    send_async,
    set_event,
    set_event_async,
    write_stream,
    write_stream_async,
)
from pgtasks.engine.waiting import in_task, recv, recv_async, sleep, sleep_async

__all__ = [
    "Messaging",
    "close_stream",
    "close_stream_async",
    "get_event",
    "get_event_async",
    "recv",
    "recv_async",
    "send",
    "send_async",
    "set_event",
    "set_event_async",
    "sleep",
    "sleep_async",
    "write_stream",
    "write_stream_async",
]


def send(
    destination: str, message: Any, topic: str | None = None, idempotency_key: str | None = None
) -> bool:
    """Inside a task: send ``message`` to the task ``destination`` (a step of this task: a
    re-run does not send it again). From elsewhere use ``app.send`` or ``client.send``."""
    ctx = in_task("send")
    return messaging.send(ctx.engine, destination, message, topic, idempotency_key)


def get_event(task_id: str, key: str, timeout: float | dt.timedelta = 60.0) -> Any:
    """Inside a task: the value of ``task_id``'s event ``key``, waiting durably up to
    ``timeout`` (None when it is not set by then). From elsewhere: ``app.get_event``."""
    return waiting.get_event_in_task(task_id, key, timeout)


async def get_event_async(task_id: str, key: str, timeout: float | dt.timedelta = 60.0) -> Any:
    """:func:`get_event` for an ``async def`` task."""
    return await waiting.get_event_in_task_async(task_id, key, timeout)


class Messaging:
    """Mixed into App and Client: messages, events and streams from any process."""

    engine: Engine

    def send(
        self,
        destination: str,
        message: Any,
        topic: str | None = None,
        idempotency_key: str | None = None,
        conn: Any = None,
    ) -> bool:
        """Send ``message`` to the task ``destination`` under ``topic``; its ``recv(topic)``
        receives it once. With ``idempotency_key`` a second send of the same key to the same
        task does nothing (and returns False). ``conn``: a psycopg connection whose open
        transaction the send joins (PostgreSQL), so the message exists only if it commits."""
        return messaging.send(self.engine, destination, message, topic, idempotency_key, conn)

    def get_event(self, task_id: str, key: str, timeout: float | dt.timedelta | None = 60.0) -> Any:
        """The value of ``task_id``'s event ``key``, waiting up to ``timeout`` seconds for it
        to be set; None if it is not by then (``timeout=None``: look once)."""
        return messaging.get_event(self.engine, task_id, key, timeout)

    def read_stream(
        self, task_id: str, key: str, timeout: float | dt.timedelta | None = None
    ) -> Iterator[Any]:
        """The values of ``task_id``'s stream ``key``, following the task while it runs; the
        iterator ends when the stream is closed or the task has finished. ``timeout``: the
        longest wait for a next value (TaskTimeoutError)."""
        return messaging.read_stream(self.engine, task_id, key, timeout)
