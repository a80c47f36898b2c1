"""Durable waiting inside a running task (docs/waiting.md): sleep, receive a message, wait
for another task's event, without holding a worker slot.

Each wait is two positions in the task's history: its deadline, recorded once as a step in
database time (so a re-run waits for the same moment, whoever runs it and whenever), and,
for a receive, the step that records what arrived (None on timeout). A look at what the task
waits for (:meth:`SystemDatabase.task_wait`) either finds it, or finds the deadline passed,
or, with more than :data:`HOLD_MS` left, suspends the task: its row waits as DELAYED until
the deadline (woken earlier by the message or event) and :class:`TaskSuspended` unwinds the
body; the worker's slot is free and the task resumes on any worker, replaying its steps. A
shorter wait is waited in place, looking again every :data:`POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pgtasks.engine.context import TaskContext, running_context
from pgtasks.engine.errors import ConfigurationError, NonDeterminismError, TaskAbandoned, TaskSuspended
from pgtasks.engine.lookups import storable_text
from pgtasks.engine.retry import with_database_retry
from pgtasks.sysdb.records import StepRecord, WaitParams, WaitResult, WaitState

T = TypeVar("T")

# A wait with at most this long left keeps its worker slot and waits in place: suspending and
# claiming again would cost more than it frees.
HOLD_MS = 500
POLL_SECONDS = 0.1  # how often a wait in place looks again (SQLite; PostgreSQL alike)
DEFAULT_TOPIC = "__default__"  # the topic of messages sent and received without one

SLEEP_STEP = "pgtasks.sleep"
RECV_DEADLINE_STEP = "pgtasks.recv.deadline"
RECV_STEP = "pgtasks.recv"
EVENT_DEADLINE_STEP = "pgtasks.get_event.deadline"
EVENT_STEP = "pgtasks.get_event"


def duration_seconds(duration: float | dt.timedelta, what: str) -> float:
    """``duration`` (seconds or a timedelta) as seconds, refusing what is not a finite
    duration >= 0 with an error that says so."""
    if isinstance(duration, dt.timedelta):
        seconds = duration.total_seconds()
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        seconds = float(duration)
    else:
        raise ConfigurationError(f"{what} must be a number of seconds or a timedelta, not {duration!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigurationError(f"{what} must be a finite number of seconds >= 0, not {duration!r}")
    return seconds


def topic_name(topic: str | None) -> str:
    """The stored topic of ``topic`` (None: the default topic)."""
    if topic is None:
        return DEFAULT_TOPIC
    if not isinstance(topic, str) or not topic:
        raise ConfigurationError(f"a message topic must be a non-empty string or None, not {topic!r}")
    return storable_text(topic, "message topic")


def in_task(what: str) -> TaskContext:
    """The running task's context; outside a task, an error saying where ``what`` works."""
    ctx = running_context()
    if ctx is None:
        raise RuntimeError(f"pgtasks.{what}() works inside a running task only (see docs/waiting.md)")
    return ctx


# -- sleep ------------------------------------------------------------------------------
def sleep(duration: float | dt.timedelta) -> None:
    """Sleep durably inside a task (outside one, an ordinary sleep)."""
    seconds = duration_seconds(duration, "sleep duration")
    ctx = running_context()
    if ctx is None:
        time.sleep(seconds)
        return
    wake_at = deadline(ctx, SLEEP_STEP, seconds, suspend=True)
    if not _past(ctx, wake_at):
        wait(ctx, _params(ctx, wake_at), time.sleep)


async def sleep_async(duration: float | dt.timedelta) -> None:
    """:func:`sleep` for an ``async def`` task: the other coroutines run meanwhile."""
    seconds = duration_seconds(duration, "sleep duration")
    ctx = running_context()
    if ctx is None:
        await asyncio.sleep(seconds)
        return
    wake_at = await off_loop(ctx, lambda: deadline(ctx, SLEEP_STEP, seconds, suspend=True))
    if not _past(ctx, wake_at):
        await wait_async(ctx, _params(ctx, wake_at))


def _past(ctx: TaskContext, wake_at: int) -> bool:
    """Whether the wake-up time was already past when this run was claimed (a recovered or
    resumed task replaying an old sleep): then no database look is needed."""
    started = ctx.record.started_at_epoch_ms
    return started is not None and wake_at <= started


# -- the parts every wait is made of -----------------------------------------------------
def deadline(ctx: TaskContext, name: str, seconds: float, suspend: bool = False) -> int:
    """The wait's deadline (epoch ms, database time): recorded now as step ``name``, or read
    back from the history when this run replays it. ``suspend`` (a sleep): a long one
    suspends the task in the same transaction (TaskSuspended)."""
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        expect_step(ctx, recorded, name)
        return int(recorded.output or 0)
    step = new_step(ctx, function_id, name)
    database = ctx.engine.database
    recorded_at = with_database_retry(
        lambda: database.sysdb.wait_deadline(step, round(seconds * 1000), HOLD_MS if suspend else None),
        ctx.engine.settings.lease_seconds,
        "recording a wait",
        ctx.task_id,
    )
    if recorded_at.state is WaitState.ABANDONED:
        raise TaskAbandoned(ctx.task_id)
    if recorded_at.state is WaitState.SUSPENDED:
        raise TaskSuspended(ctx.task_id)
    ctx.steps[function_id] = dataclasses.replace(step, output=str(recorded_at.wake_at_ms))
    return recorded_at.wake_at_ms


def new_step(ctx: TaskContext, function_id: int, name: str) -> StepRecord:
    """The checkpoint row of this run's step ``name`` at ``function_id``, output not yet set."""
    return StepRecord(
        task_id=ctx.task_id,
        function_id=function_id,
        function_name=name,
        output=None,
        error=None,
        started_at_epoch_ms=int(time.time() * 1000),
        executor_id=ctx.executor_id,
        claim_token=ctx.record.claim_token,
    )


def expect_step(ctx: TaskContext, recorded: StepRecord, name: str) -> None:
    """Refuse a history whose step at this position is not ``name`` (the body changed)."""
    if recorded.function_name != name:
        raise NonDeterminismError(
            f"task {ctx.record.name!r} ({ctx.task_id}) called {name!r} at position "
            f"{recorded.function_id}, but its history has {recorded.function_name!r} there: the "
            "task body must make the same calls in the same order on every run"
        )


def _params(ctx: TaskContext, deadline_ms: int, **what: Any) -> WaitParams:
    return WaitParams(
        task_id=ctx.task_id,
        executor_id=ctx.executor_id,
        claim_token=ctx.record.claim_token,
        deadline_ms=deadline_ms,
        hold_ms=HOLD_MS,
        **what,
    )


def _look(ctx: TaskContext, params: WaitParams) -> WaitResult | float:
    """One look: the DONE result, or the seconds to wait in place before the next look.
    Raises TaskSuspended when the task now waits as DELAYED, TaskAbandoned when it is not
    this run's any more."""
    database = ctx.engine.database
    result = with_database_retry(
        lambda: database.sysdb.task_wait(params), ctx.engine.settings.lease_seconds, "waiting", ctx.task_id
    )
    if result.state is WaitState.SUSPENDED:
        raise TaskSuspended(ctx.task_id)
    if result.state is WaitState.ABANDONED:
        raise TaskAbandoned(ctx.task_id)
    if result.state is WaitState.WAIT:
        return min(POLL_SECONDS, result.remaining_ms / 1000)
    if params.step is not None:
        ctx.steps[params.step.function_id] = dataclasses.replace(
            params.step, output=result.output, serialization=result.serialization
        )
    ctx.confirmed_at = time.monotonic()
    return result


def wait(ctx: TaskContext, params: WaitParams, pause: Callable[[float], None]) -> WaitResult:
    """Look until the wait is DONE, pausing in place between looks."""
    while True:
        result = _look(ctx, params)
        if isinstance(result, WaitResult):
            return result
        pause(result)


async def wait_async(ctx: TaskContext, params: WaitParams) -> WaitResult:
    """:func:`wait` in a coroutine: looks off the event loop, pauses by ``asyncio.sleep``."""
    while True:
        result = await off_loop(ctx, lambda: _look(ctx, params))
        if isinstance(result, WaitResult):
            return result
        await asyncio.sleep(result)


async def off_loop(ctx: TaskContext, call: Callable[[], T]) -> T:
    """Run a blocking database call from a coroutine: on a thread when the event loop is
    shared with other tasks (the asyncio pool), inline on the task's own loop."""
    if not ctx.shared_loop:
        return call()
    return await asyncio.get_running_loop().run_in_executor(None, call)


def decoded(ctx: TaskContext, result: WaitResult, what: str) -> Any:
    """The value a wait found (None when it timed out)."""
    if result.output is None:
        return None
    return ctx.engine.codec.loads(result.serialization, result.output, what)


# -- receiving a message and waiting for an event ---------------------------------------
def recv(topic: str | None = None, timeout: float | dt.timedelta = 60.0) -> Any:
    """The oldest message of ``topic`` sent to this task, consumed; None after ``timeout``."""
    ctx = in_task("recv")
    params = _recv_params(ctx, topic, timeout)
    return params if not isinstance(params, WaitParams) else _received(ctx, wait(ctx, params, time.sleep))


async def recv_async(topic: str | None = None, timeout: float | dt.timedelta = 60.0) -> Any:
    """:func:`recv` for an ``async def`` task."""
    ctx = in_task("recv_async")
    params = await off_loop(ctx, lambda: _recv_params(ctx, topic, timeout))
    if not isinstance(params, WaitParams):
        return params
    return _received(ctx, await wait_async(ctx, params))


def _recv_params(ctx: TaskContext, topic: str | None, timeout: float | dt.timedelta) -> WaitParams | Any:
    stored_topic = topic_name(topic)
    seconds = duration_seconds(timeout, "recv timeout")
    return _receiving(ctx, RECV_DEADLINE_STEP, RECV_STEP, seconds, topic=stored_topic)


def _received(ctx: TaskContext, result: WaitResult) -> Any:
    return decoded(ctx, result, "a received message")


def get_event_in_task(task_id: str, key: str, timeout: float | dt.timedelta) -> Any:
    """``get_event`` inside a task: a durable wait (see :func:`recv`)."""
    ctx = in_task("get_event")
    _check_event(task_id, key)
    seconds = duration_seconds(timeout, "get_event timeout")
    params = _receiving(ctx, EVENT_DEADLINE_STEP, EVENT_STEP, seconds, event_task_id=task_id, event_key=key)
    if not isinstance(params, WaitParams):
        return params
    return decoded(ctx, wait(ctx, params, time.sleep), f"event {key!r}")


async def get_event_in_task_async(task_id: str, key: str, timeout: float | dt.timedelta) -> Any:
    """:func:`get_event_in_task` for an ``async def`` task."""
    ctx = in_task("get_event_async")
    _check_event(task_id, key)
    seconds = duration_seconds(timeout, "get_event timeout")

    def prepare() -> WaitParams | Any:
        return _receiving(ctx, EVENT_DEADLINE_STEP, EVENT_STEP, seconds, event_task_id=task_id, event_key=key)

    params = await off_loop(ctx, prepare)
    if not isinstance(params, WaitParams):
        return params
    return decoded(ctx, await wait_async(ctx, params), f"event {key!r}")


def _check_event(task_id: str, key: str) -> None:
    for value, what in ((task_id, "task id"), (key, "event key")):
        if not isinstance(value, str) or not value:
            raise ConfigurationError(f"get_event: the {what} must be a non-empty string, not {value!r}")


def _receiving(
    ctx: TaskContext, deadline_name: str, name: str, seconds: float, **what: Any
) -> WaitParams | Any:
    """The wait's parameters; or, when this run replays a receive that ended before, what it
    received then (a forked or resumed task sees what its history consumed)."""
    wake_at = deadline(ctx, deadline_name, seconds)
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        expect_step(ctx, recorded, name)
        replayed = WaitResult(WaitState.DONE, recorded.output, recorded.serialization)
        return decoded(ctx, replayed, f"the output of {name!r}")
    return _params(ctx, wake_at, step=new_step(ctx, function_id, name), **what)
