"""Executing one claimed task: look it up, read its inputs, run it with its recorded steps."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from pgtasks.engine import context, tracing
from pgtasks.engine.errors import (
    RetryRequested,
    SerializationError,
    TaskAbandoned,
    TaskNotRegistered,
    TaskReleased,
)
from pgtasks.engine.failures import describe_failure, encode_exception
from pgtasks.engine.retry import with_database_retry
from pgtasks.engine.serialization import check_payload_size
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


def execute_task(
    engine: Engine, record: TaskRecord, executor_id: str, steps: list[StepRecord] | None = None
) -> Outcome | None:
    """Run a task this executor has claimed and return its outcome, not yet written.

    Returns None when the task was abandoned (cancelled, or taken over by another executor):
    then nothing must be written for it. Returns an ENQUEUED outcome (a release) when the
    database stayed unreachable for a whole lease in the middle of the task. A task whose
    name is unknown or whose inputs cannot be read fails at once with a precise error
    instead of being retried forever.
    """
    try:
        definition = engine.registry.get(record.name)
        args, kwargs = engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
    except (TaskNotRegistered, SerializationError) as exc:
        return Outcome(
            record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token
        )
    release = Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token)
    if steps is None:
        try:
            steps = with_database_retry(
                lambda: engine._sysdb.steps_get(record.task_id),
                engine.settings.lease_seconds,
                "loading steps",
                record.task_id,
            )
        except TaskReleased:
            return release
    ctx = context.TaskContext(record, executor_id, engine, {s.function_id: s for s in steps})
    with tracing.running(record, executor_id) as span:
        token = context.enter(ctx)
        try:
            value = definition.fn(*args, **kwargs)
            if inspect.isawaitable(value):  # an async def task: its own event loop, here
                value = run_coroutine(value)
        except TaskAbandoned:
            span.note("abandoned")
            return None
        except TaskReleased:
            span.note("released")
            return release
        except RetryRequested as retry:
            span.retrying(retry.countdown, retry.reason)
            return _retry_outcome(engine, record, retry, args, kwargs)
        except BaseException as exc:  # a failing task never takes the worker down (CancelledError too)
            span.failed(exc)
            return Outcome(
                record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token
            )
        finally:
            context.leave(token)
        outcome = _success_outcome(engine, record, value)
        if outcome.status is Status.ERROR:
            span.note("return value not recorded")
        return outcome


def run_coroutine(awaitable: Awaitable[Any]) -> Any:
    """Run an async task's coroutine to its end on an event loop of its own, in this thread
    (a pool thread or a prefork child): its awaits overlap inside it, its steps checkpoint as
    sync ones do, and an exception it raises comes out here."""

    async def main() -> Any:
        return await awaitable

    return asyncio.run(main())


def _success_outcome(engine: Engine, record: TaskRecord, value: Any) -> Outcome:
    """SUCCESS with the encoded return value, or ERROR saying why it cannot be recorded (it
    cannot be serialized, or is over ``max_payload_bytes``): never an exception, so the body
    never runs again because its outcome could not be written."""
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
    engine: Engine, record: TaskRecord, retry: RetryRequested, args: list[Any], kwargs: dict[str, Any]
) -> Outcome:
    """The outcome of a task that asked to run again, with new arguments if it gave any."""
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
    )
