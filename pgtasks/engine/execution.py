"""Executing one claimed task: look it up, read its inputs, run it with its recorded steps."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from pgtasks.engine import context, tracing
from pgtasks.engine.errors import (
    ConfigurationError,
    RetryRequested,
    SerializationError,
    SoftTimeLimitExceeded,
    TaskAbandoned,
    TaskNotRegistered,
    TaskReleased,
    TaskSuspended,
    TimeLimitExceeded,
)
from pgtasks.engine.failures import describe_failure, encode_exception
from pgtasks.engine.forks import exit_if_forked_copy
from pgtasks.engine.options import check_priority
from pgtasks.engine.registry import TaskDefinition
from pgtasks.engine.retry import with_database_retry, with_database_retry_async
from pgtasks.engine.serialization import check_payload_size
from pgtasks.engine.settings import validate_queue_name
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord

if TYPE_CHECKING:
    from pgtasks.engine.runtime import Runtime


def execute_task(
    engine: Runtime, record: TaskRecord, executor_id: str, steps: list[StepRecord] | None = None
) -> Outcome | None:
    """Run a task this executor has claimed and return its outcome, not yet written.

    Returns None when the task was abandoned (cancelled, or taken over by another executor):
    then nothing must be written for it. Returns an ENQUEUED outcome (a release) when the
    database stayed unreachable for a whole lease in the middle of the task. A task whose
    name is unknown or whose inputs cannot be read fails at once with a precise error
    instead of being retried forever.
    """
    prepared = _prepare(engine, record)
    if isinstance(prepared, Outcome):
        return prepared
    definition, args, kwargs = prepared
    if steps is None:
        try:
            steps = with_database_retry(
                lambda: engine.database.sysdb.steps_get(record.task_id),
                engine.settings.lease_seconds,
                "loading steps",
                record.task_id,
            )
        except TaskReleased:
            return _release(record)
    ctx = context.TaskContext(
        record, executor_id, engine, {s.function_id: s for s in steps}, confirmed_at=record.claimed_at
    )
    pid = ctx.pid
    with tracing.running(record, executor_id) as span:
        token = context.enter(ctx)
        try:
            value = definition.fn(*args, **kwargs)
            if inspect.isawaitable(value):  # an async def task: its own event loop, here
                value = run_coroutine(value)
        except BaseException as exc:  # a failing task never takes the worker down (CancelledError too)
            exit_if_forked_copy(pid, record.task_id, "task", exc)
            return _ended(engine, record, span, exc, args, kwargs)
        finally:
            context.leave(token)
        exit_if_forked_copy(pid, record.task_id, "task")
        return _succeeded(engine, record, span, value)


async def execute_task_async(
    engine: Runtime,
    record: TaskRecord,
    executor_id: str,
    steps: list[StepRecord] | None = None,
    limits: TimeLimits = (None, None),
) -> Outcome | None:
    """:func:`execute_task` on a shared event loop (the asyncio pool), for an ``async def``
    task: its coroutine runs on this loop beside the others, its database calls never block
    the loop, and ``limits`` (hard, soft seconds) cancel it. A sync task is not for this
    function: the pool runs it on a thread with :func:`execute_task`."""
    prepared = _prepare(engine, record)
    if isinstance(prepared, Outcome):
        return prepared
    definition, args, kwargs = prepared
    if steps is None:
        loop = asyncio.get_running_loop()
        try:
            steps = await with_database_retry_async(
                lambda: loop.run_in_executor(None, engine.database.sysdb.steps_get, record.task_id),
                engine.settings.lease_seconds,
                "loading steps",
                record.task_id,
            )
        except TaskReleased:
            return _release(record)
    ctx = context.TaskContext(
        record,
        executor_id,
        engine,
        {s.function_id: s for s in steps},
        confirmed_at=record.claimed_at,
        shared_loop=True,
    )
    with tracing.running(record, executor_id) as span:
        token = context.enter(ctx)
        try:
            body = definition.fn(*args, **kwargs)
            # Without limits the body is awaited here: a coroutine frame less between the loop
            # and every step the task awaits.
            value = await (body if limits == _NO_LIMITS else within_limits(body, limits))
        except BaseException as exc:  # CancelledError too (a pool that cancelled it drops this)
            return _ended(engine, record, span, exc, args, kwargs)
        finally:
            context.leave(token)
        return _succeeded(engine, record, span, value)


async def within_limits(awaitable: Awaitable[Any], limits: TimeLimits) -> Any:
    """Await ``awaitable`` under (hard, soft) time limits in seconds.

    At the soft limit the coroutine is cancelled (CancelledError inside it, which it may
    catch to clean up and return); if it ends by that cancellation it raises
    SoftTimeLimitExceeded. At the hard limit it is cancelled and TimeLimitExceeded is raised at
    once, without waiting for it: whatever it still does cannot checkpoint (the task's row
    is no longer PENDING here once the error is written)."""
    hard, soft = limits
    if hard is None and soft is None:
        return await awaitable
    inner = asyncio.ensure_future(awaitable)
    outer = asyncio.current_task()
    if outer is not None and isinstance(inner, asyncio.Task):
        inner.set_name(outer.get_name())  # the asyncio pool's watchdog finds the task by name
    loop = asyncio.get_running_loop()
    soft_fired = False

    def soft_limit() -> None:
        nonlocal soft_fired
        soft_fired = True
        inner.cancel("soft time limit")

    timer = loop.call_later(soft, soft_limit) if soft is not None else None
    try:
        done, _ = await asyncio.wait({inner}, timeout=hard)
        if not done:
            inner.cancel("time limit")
            raise TimeLimitExceeded(f"task ran longer than its time limit of {hard:g}s")
        try:
            return inner.result()
        except asyncio.CancelledError:
            if soft_fired:
                raise SoftTimeLimitExceeded(f"task ran past its soft time limit of {soft:g}s") from None
            raise
    except asyncio.CancelledError:  # this task was cancelled (a revoke): so is the coroutine
        inner.cancel()
        raise
    finally:
        if timer is not None:
            timer.cancel()


def _prepare(engine: Runtime, record: TaskRecord) -> tuple[TaskDefinition, Any, Any] | Outcome:
    """The task's definition and decoded arguments, or the ERROR outcome saying why not."""
    try:
        definition = engine.registry.get(record.name)
        args, kwargs = engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
    except (TaskNotRegistered, SerializationError) as exc:
        return Outcome(
            record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token
        )
    return definition, args, kwargs


def _release(record: TaskRecord) -> Outcome:
    return Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token)


def _ended(
    engine: Runtime,
    record: TaskRecord,
    span: tracing.TaskSpan,
    exc: BaseException,
    args: list[Any],
    kwargs: dict[str, Any],
) -> Outcome | None:
    """The outcome of a task whose body raised ``exc``."""
    if isinstance(exc, TaskAbandoned):
        span.note("abandoned")
        return None
    if isinstance(exc, TaskReleased):
        span.note("released")
        return _release(record)
    if isinstance(exc, TaskSuspended):  # its row waits as DELAYED already: nothing to write
        span.note("suspended")
        return Outcome(record.task_id, Status.DELAYED, claim_token=record.claim_token)
    if isinstance(exc, RetryRequested):
        span.retrying(exc.countdown, exc.reason)
        return _retry_outcome(engine, record, exc, args, kwargs)
    span.failed(exc)
    return Outcome(record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token)


def _succeeded(engine: Runtime, record: TaskRecord, span: tracing.TaskSpan, value: Any) -> Outcome:
    outcome = _success_outcome(engine, record, value)
    if outcome.status is Status.ERROR:
        span.note("return value not recorded")
    return outcome


def run_coroutine(awaitable: Awaitable[Any]) -> Any:
    """Run an async task's coroutine to its end from this thread, and return its value or raise
    its exception. On a pool thread or a prefork child it gets an event loop of its own: its
    awaits overlap inside it and its steps checkpoint as sync ones do. On a thread of the
    asyncio pool (a sync wrapper, such as a Celery task's tracer, around a coroutine) it runs
    on the pool's shared loop while this thread waits."""
    shared = _shared_loop.get()
    if shared is None:

        async def main() -> Any:
            return await awaitable

        return asyncio.run(main())
    loop, limits = shared
    ctx = context.running_context()
    if ctx is not None:
        ctx.shared_loop = True  # its async steps now run on the shared loop: they must not block it
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    here = contextvars.copy_context()  # the task's context (running task, trace) goes with it

    async def body() -> Any:
        return await within_limits(awaitable, limits)

    def copy_outcome(task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            done.set_exception(asyncio.CancelledError())
        elif (error := task.exception()) is not None:
            done.set_exception(error)
        else:
            done.set_result(task.result())

    def start() -> None:
        here.run(loop.create_task, body()).add_done_callback(copy_outcome)  # a copy of here

    loop.call_soon_threadsafe(start)
    return done.result()


TimeLimits = tuple["float | None", "float | None"]
_NO_LIMITS: TimeLimits = (None, None)
_shared_loop: contextvars.ContextVar[tuple[asyncio.AbstractEventLoop, TimeLimits] | None] = (
    contextvars.ContextVar("pgtasks_shared_loop", default=None)
)


def on_shared_loop(loop: asyncio.AbstractEventLoop, limits: TimeLimits) -> contextvars.Token[Any]:
    """Mark this thread's context as serving the asyncio pool's ``loop`` (see run_coroutine)."""
    return _shared_loop.set((loop, limits))


def _success_outcome(engine: Runtime, record: TaskRecord, value: Any) -> Outcome:
    """SUCCESS with the encoded return value, or ERROR saying why it cannot be recorded (it
    cannot be serialized, or is over ``max_payload_bytes``): never an exception, so the body
    never runs again because its outcome could not be written."""
    # A task that returns nothing: its output needs no encoder and fits any sane limit.
    if value is None and record.serialization == "json" and engine.settings.max_payload_bytes >= 4:
        return Outcome(record.task_id, Status.SUCCESS, output="null", claim_token=record.claim_token)
    what = f"return value of task {record.name!r}"
    try:
        _, output = engine.codec.dumps(value, what, record.serialization)
        check_payload_size(record.name, output, engine.settings.max_payload_bytes, "return value")
    except BaseException as exc:  # a hostile value may raise anything
        if not isinstance(exc, SerializationError):
            exc = SerializationError(f"{what} cannot be serialized: {describe_failure(exc)}")
        return Outcome(
            record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token
        )
    return Outcome(record.task_id, Status.SUCCESS, output=output, claim_token=record.claim_token)


def _retry_outcome(
    engine: Runtime, record: TaskRecord, retry: RetryRequested, args: list[Any], kwargs: dict[str, Any]
) -> Outcome:
    """The outcome of a task that asked to run again, with new arguments, queue or priority if
    it gave any (a queue or priority that is refused ends the task ERROR saying why)."""
    try:
        if retry.queue is not None:
            validate_queue_name(retry.queue)
        if retry.priority is not None:
            check_priority(retry.priority)
    except ConfigurationError as exc:
        error = ConfigurationError(f"retry of task {record.name!r}: {exc}")
        return Outcome(
            record.task_id, Status.ERROR, error=encode_exception(error), claim_token=record.claim_token
        )
    inputs = None
    if retry.new_args is not None or retry.new_kwargs is not None:
        new = {
            "args": list(args if retry.new_args is None else retry.new_args),
            "kwargs": dict(kwargs if retry.new_kwargs is None else retry.new_kwargs),
        }
        try:
            what = f"retry arguments of task {record.name!r}"
            _, inputs = engine.codec.dumps(new, what, record.serialization)
        except BaseException as exc:  # as for a return value
            if not isinstance(exc, SerializationError):
                exc = SerializationError(f"retry arguments cannot be serialized: {describe_failure(exc)}")
            return Outcome(
                record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token
            )
    return Outcome(
        record.task_id,
        Status.ENQUEUED,
        error=encode_exception(retry.reason or retry),
        claim_token=record.claim_token,
        retry_in_ms=round(retry.countdown * 1000),
        inputs=inputs,
        queue=retry.queue,
        priority=retry.priority,
    )
