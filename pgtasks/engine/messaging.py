"""Messages, events and streams (docs/waiting.md): what a task writes for others, and what
others send it or read of it, from a task or from any process.

Inside a task every write is a step: a re-run (after a crash, a resume, a fork) replays it
instead of writing twice. A message sent from a task is identified by the sender and the
step's position; from outside, by the caller's idempotency key (or not at all).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pgtasks.engine.context import TaskContext, running_context
from pgtasks.engine.errors import ConfigurationError, DatabaseUnavailable, TaskAbandoned, TaskTimeoutError
from pgtasks.engine.events import STATE_KEY
from pgtasks.engine.lookups import checked_task_id, storable_text
from pgtasks.engine.retry import with_database_retry
from pgtasks.engine.serialization import check_payload_size
from pgtasks.engine.waiting import (
    duration_seconds,
    expect_step,
    in_task,
    new_step,
    off_loop,
    topic_name,
)
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.records import MessageParams, StepRecord, StepWrite

if TYPE_CHECKING:
    from pgtasks.engine.runtime import Runtime

SEND_STEP = "pgtasks.send"
SET_EVENT_STEP = "pgtasks.set_event"
STREAM_STEP = "pgtasks.write_stream"
RESERVED_KEYS = frozenset({STATE_KEY, "terminate"})  # workflow_events keys pgtasks itself uses
# How a reader outside a task polls for an event or a stream's next values.
READ_BACKOFF = Backoff(first=0.05, cap=1.0, factor=1.5)
STREAM_PAGE = 100


def _check_key(key: str, what: str) -> str:
    if not isinstance(key, str) or not key:
        raise ConfigurationError(f"{what} must be a non-empty string, not {key!r}")
    if key in RESERVED_KEYS and what == "an event key":
        raise ConfigurationError(f"event key {key!r} is reserved by pgtasks; choose another")
    return storable_text(key, what.removeprefix("an ").removeprefix("a "))


def _encoded(engine: Runtime, value: Any, what: str, tag: str | None = None) -> tuple[str, str]:
    tag, text = engine.codec.dumps(value, what, tag)
    check_payload_size(what, text, engine.settings.max_payload_bytes, "value")
    return tag, text


# -- messages -----------------------------------------------------------------------------
def send(
    engine: Runtime,
    destination: str,
    message: Any,
    topic: str | None = None,
    idempotency_key: str | None = None,
    conn: Any = None,
    _ctx: TaskContext | None = None,
) -> bool:
    """Send ``message`` to the task ``destination`` (see ``App.send``). Inside a task the
    send is a step of the sender. False when this message was sent before (same key).
    ``_ctx``: the running task's context, for a call made off its thread (send_async)."""
    if not isinstance(destination, str) or not destination:
        raise ConfigurationError(f"the destination must be a task id, not {destination!r}")
    storable_text(destination, "the destination task id")
    stored_topic = topic_name(topic)
    if idempotency_key is not None and (not isinstance(idempotency_key, str) or not idempotency_key):
        raise ConfigurationError(f"idempotency_key must be a non-empty string, not {idempotency_key!r}")
    ctx = _ctx or running_context()
    if ctx is not None and conn is None:
        return _send_in_task(ctx, destination, message, stored_topic, idempotency_key)
    tag, text = _encoded(engine, message, f"message to task {destination!r}")
    message_id = f"{destination}:{idempotency_key or uuid.uuid4().hex}"
    params = MessageParams(message_id, destination, stored_topic, text, tag)
    try:
        return engine.database.sysdb.message_send(params, conn)
    except LookupError:
        raise ConfigurationError(f"no task with id {destination!r} to send a message to") from None


def _send_in_task(ctx: TaskContext, destination: str, message: Any, topic: str, key: str | None) -> bool:
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        expect_step(ctx, recorded, SEND_STEP)
        return recorded.output == "true"  # what the first run returned
    engine = ctx.engine
    tag, text = _encoded(engine, message, f"message to task {destination!r}", ctx.record.serialization)
    message_id = f"{destination}:{key or f'{ctx.task_id}:{function_id}'}"
    params = MessageParams(message_id, destination, topic, text, tag)

    def write() -> bool:
        return engine.database.sysdb.message_send(params)

    try:
        sent = with_database_retry(write, engine.settings.lease_seconds, "sending a message", ctx.task_id)
    except LookupError:
        raise ConfigurationError(f"no task with id {destination!r} to send a message to") from None
    step = dataclasses.replace(new_step(ctx, function_id, SEND_STEP), output="true" if sent else "false")
    _record(ctx, step, engine.database.record_step)
    return sent


# -- events -------------------------------------------------------------------------------
def set_event(key: str, value: Any) -> None:
    """Set this task's event ``key`` to ``value`` (a step: every value is kept, by step)."""
    _set_event(in_task("set_event"), key, value)


def _set_event(ctx: TaskContext, key: str, value: Any) -> None:
    _check_key(key, "an event key")
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        expect_step(ctx, recorded, SET_EVENT_STEP)
        return
    engine = ctx.engine
    tag, text = _encoded(engine, value, f"event {key!r}", ctx.record.serialization)
    database = engine.database
    _record(
        ctx,
        new_step(ctx, function_id, SET_EVENT_STEP),
        lambda step: database.sysdb.event_publish(step, key, text, tag),
    )


def get_event(engine: Runtime, task_id: str, key: str, timeout: float | dt.timedelta | None = 60.0) -> Any:
    """The value of ``task_id``'s event ``key``, waiting up to ``timeout`` seconds for it to be
    set (None after that; ``timeout`` None: only look). Outside a task this waits by LISTEN
    on PostgreSQL (polling on SQLite, or through a transaction pool without ``listen_url``);
    inside one (``pgtasks.get_event``) the wait is durable."""
    checked_task_id(task_id)
    _check_key(key, "an event key")
    seconds = 0.0 if timeout is None else duration_seconds(timeout, "get_event timeout")
    deadline = time.monotonic() + seconds
    sysdb = engine.database.sysdb
    found = sysdb.task_event_get(task_id, key)
    # Not set yet: LISTEN (PostgreSQL), then read again, so a value set in between is seen.
    listener = sysdb.open_event_listener() if found is None and seconds > 0 else None
    try:
        attempt = 0 if listener is not None else 1  # once listening, read again at once
        while found is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            announced = True
            if listener is None:
                time.sleep(min(left, READ_BACKOFF.delay(attempt)))
            elif attempt > 0:
                try:
                    announced = task_id in listener.wait(min(left, 1.0))
                except DatabaseUnavailable:  # the listener's session is gone: poll from now on
                    listener.close()
                    listener = None
            attempt += 1
            if announced:
                found = sysdb.task_event_get(task_id, key)
    finally:
        if listener is not None:
            listener.close()
    return engine.codec.loads(found[0], found[1], f"event {key!r} of task {task_id!r}")


# -- streams ------------------------------------------------------------------------------
def write_stream(key: str, value: Any) -> None:
    """Append ``value`` to this task's stream ``key`` (a step)."""
    _stream_step(in_task("write_stream"), _check_key(key, "a stream key"), value, closing=False)


def close_stream(key: str) -> None:
    """Close this task's stream ``key``: its readers stop after the last value."""
    _stream_step(in_task("close_stream"), _check_key(key, "a stream key"), None, closing=True)


def _stream_step(ctx: TaskContext, key: str, value: Any, closing: bool) -> None:
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        expect_step(ctx, recorded, STREAM_STEP)
        return
    engine = ctx.engine
    tag, text = (
        ("json", None) if closing else _encoded(engine, value, f"stream {key!r}", ctx.record.serialization)
    )
    database = engine.database
    _record(
        ctx,
        new_step(ctx, function_id, STREAM_STEP),
        lambda step: database.sysdb.stream_write(step, key, text, tag),
    )


def read_stream(
    engine: Runtime, task_id: str, key: str, timeout: float | dt.timedelta | None = None
) -> Iterator[Any]:
    """The values of ``task_id``'s stream ``key`` in order, following the task while it runs:
    ends when the stream is closed or the task has finished and nothing more is there.
    ``timeout``: the longest wait for the next value (TaskTimeoutError), None: no limit."""
    checked_task_id(task_id)
    _check_key(key, "a stream key")
    limit = None if timeout is None else duration_seconds(timeout, "read_stream timeout")
    sysdb = engine.database.sysdb
    position, attempt, waiting_since = 0, 0, time.monotonic()
    while True:
        entries = sysdb.stream_read(task_id, key, position, STREAM_PAGE)
        for entry in entries:
            if entry.value is None:
                return
            yield engine.codec.loads(entry.serialization, entry.value, f"stream {key!r}")
            position = entry.position + 1
        if entries:
            attempt, waiting_since = 0, time.monotonic()
            continue
        task = sysdb.task_get(task_id)
        if task is None or task.status.is_terminal:
            if not sysdb.stream_read(task_id, key, position, 1):  # nothing written meanwhile
                return
            continue
        if limit is not None and time.monotonic() - waiting_since > limit:
            raise TaskTimeoutError(f"stream {key!r} of task {task_id} had no new value within {limit:g}s")
        attempt += 1
        time.sleep(READ_BACKOFF.delay(attempt))


# -- the step every write above records -----------------------------------------------------
def _record(ctx: TaskContext, step: StepRecord, write: Any) -> None:
    """Write ``step`` (and what goes with it) through ``write``, retried through an outage."""
    written = with_database_retry(
        lambda: write(step), ctx.engine.settings.lease_seconds, step.function_name, ctx.task_id
    )
    if written is not StepWrite.RECORDED:
        raise TaskAbandoned(ctx.task_id)
    ctx.steps[step.function_id] = step
    ctx.confirmed_at = time.monotonic()


# -- the same writes from an ``async def`` task --------------------------------------------------
async def send_async(
    destination: str, message: Any, topic: str | None = None, idempotency_key: str | None = None
) -> bool:
    """:func:`send` inside an ``async def`` task: its database calls never block the loop."""
    ctx = in_task("send_async")
    return await off_loop(
        ctx, lambda: send(ctx.engine, destination, message, topic, idempotency_key, _ctx=ctx)
    )


async def set_event_async(key: str, value: Any) -> None:
    """:func:`set_event` inside an ``async def`` task."""
    ctx = in_task("set_event_async")
    await off_loop(ctx, lambda: _set_event(ctx, key, value))


async def write_stream_async(key: str, value: Any) -> None:
    """:func:`write_stream` inside an ``async def`` task."""
    ctx = in_task("write_stream_async")
    await off_loop(ctx, lambda: _stream_step(ctx, _check_key(key, "a stream key"), value, closing=False))


async def close_stream_async(key: str) -> None:
    """:func:`close_stream` inside an ``async def`` task."""
    ctx = in_task("close_stream_async")
    await off_loop(ctx, lambda: _stream_step(ctx, _check_key(key, "a stream key"), None, closing=True))
