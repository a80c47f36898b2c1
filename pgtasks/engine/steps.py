"""Durable steps: run once, checkpoint the output, replay the checkpoint on re-execution."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pgtasks.engine import tracing
from pgtasks.engine.context import TaskContext, running_context
from pgtasks.engine.crashpoints import crashpoint
from pgtasks.engine.errors import ConfigurationError, NonDeterminismError, TaskAbandoned
from pgtasks.engine.failures import decode_exception, encode_exception
from pgtasks.engine.forks import exit_if_forked_copy
from pgtasks.engine.retry import retry_database_async, with_database_retry
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.errors import DatabaseUnavailable
from pgtasks.sysdb.records import StepRecord, StepWrite, TaskOwner

# A checkpoint committed this recently proves the task still runs here as well as a fresh
# ownership read would, so the next step starts without one (a step then costs one commit).
OWNERSHIP_FRESH_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class StepOptions:
    """How a step retries: ``retries`` more tries after the first, waiting ``backoff`` seconds
    and multiplying the wait by ``backoff_rate`` after each try, up to ``max_backoff``."""

    name: str
    retries: int = 0
    backoff: float = 1.0
    backoff_rate: float = 2.0
    max_backoff: float = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"a step's name must be a non-empty string, not {self.name!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigurationError(f"step {self.name!r}: retries must be an integer >= 0")
        for field_name, low in (("backoff", 0.0), ("backoff_rate", 1.0), ("max_backoff", 0.0)):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigurationError(f"step {self.name!r}: {field_name} must be a finite number")
            if value < low:
                raise ConfigurationError(f"step {self.name!r}: {field_name} must be >= {low}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): exact, no jitter."""
        return Backoff(self.backoff, self.max_backoff, self.backoff_rate, jitter=0.0).delay(attempt)


def run_step(
    options: StepOptions, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Run ``fn`` as the next step of the current task; outside a task (or in a process the
    task forked, which must not write its history), just call it."""
    ctx = running_context()
    if ctx is None or ctx.pid != os.getpid():  # outside a task, or in a process it forked
        return fn(*args, **kwargs)
    begun = _begin(ctx, options)
    if isinstance(begun, _Replayed):
        return begun.value
    attempt = 0
    pid = ctx.pid
    with tracing.stepping(options.name, begun.function_id, ctx.task_id):
        while True:
            try:
                value = fn(*args, **kwargs)
                break
            except Exception as exc:
                exit_if_forked_copy(pid, ctx.task_id, f"step {options.name!r}", exc)
                if attempt < options.retries:
                    attempt += 1
                    time.sleep(options.delay(attempt))
                    continue
                _failed(ctx, options, begun, exc)
                raise
            except BaseException as exc:  # sys.exit() in a forked child, or the task's end
                exit_if_forked_copy(pid, ctx.task_id, f"step {options.name!r}", exc)
                raise
    exit_if_forked_copy(pid, ctx.task_id, f"step {options.name!r}")
    return _finish(ctx, options, begun, value)


async def run_step_async(
    options: StepOptions, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """:func:`run_step` for an ``async def`` step: the body is awaited, the checkpoint is the
    same. On a task's own event loop (threads, prefork) the database calls run inline; on the
    asyncio pool's shared loop they go to threads and the group-commit writer, awaited."""
    ctx = running_context()
    if ctx is None or ctx.pid != os.getpid():  # outside a task, or in a process it forked
        return await fn(*args, **kwargs)
    shared = ctx.shared_loop
    if shared:  # _begin_async inline: no coroutine to make and pass through when no read is due
        position = _position(ctx, options)
        if isinstance(position, _Replayed):
            return position.value
        if _check_due(ctx):
            await _confirm_owned_async(ctx)
        begun = _started(ctx, options, position)
    else:
        first = _begin(ctx, options)
        if isinstance(first, _Replayed):
            return first.value
        begun = first
    attempt = 0
    with tracing.stepping(options.name, begun.function_id, ctx.task_id):
        while True:
            try:
                value = await fn(*args, **kwargs)
                break
            except Exception as exc:
                if attempt < options.retries:
                    attempt += 1
                    await asyncio.sleep(options.delay(attempt))
                    continue
                if shared:
                    await _checkpoint_async(ctx, begun, options.name, None, encode_exception(exc))
                else:
                    _failed(ctx, options, begun, exc)
                raise
    if not shared:
        return _finish(ctx, options, begun, value)
    what = f"return value of step {options.name!r}"
    tag, text = ctx.engine.codec.dumps(value, what, ctx.record.serialization)
    await _checkpoint_async(ctx, begun, options.name, text, None, tag)
    return _as_replayed(ctx, options, tag, text, value)


@dataclass
class _Replayed:
    value: Any


@dataclass
class _Begun:
    function_id: int
    point: dict[str, Any]
    started: int


def _begin(ctx: TaskContext, options: StepOptions) -> _Begun | _Replayed:
    """The step's position; its recorded outcome when it ran before (returned, or raised),
    else the ownership check and the crash point before its body."""
    position = _position(ctx, options)
    if isinstance(position, _Replayed):
        return position
    if _check_due(ctx):
        engine = ctx.engine
        owned = with_database_retry(
            lambda: engine.database.sysdb.task_owned_by(ctx.task_id, ctx.executor_id, ctx.record.claim_token),
            engine.settings.lease_seconds,
            "ownership check",
            ctx.task_id,
        )
        if not owned:
            raise TaskAbandoned(ctx.task_id)  # cancelled, or another executor took it over
    return _started(ctx, options, position)


async def _confirm_owned_async(ctx: TaskContext) -> None:
    """:func:`_begin`'s ownership read on a shared event loop, awaited (the checkpoint writer
    makes it, with the other tasks' reads)."""
    database = ctx.engine.database
    owner = TaskOwner(ctx.task_id, ctx.executor_id, ctx.record.claim_token)
    started = time.monotonic()
    try:  # the first attempt inline, as in _checkpoint_async
        owned = await database.owned_async(owner)
    except DatabaseUnavailable as exc:
        owned = await retry_database_async(
            lambda: database.owned_async(owner),
            exc,
            started,
            ctx.engine.settings.lease_seconds,
            "ownership check",
            ctx.task_id,
        )
    if not owned:
        raise TaskAbandoned(ctx.task_id)


def _position(ctx: TaskContext, options: StepOptions) -> int | _Replayed:
    """The step's position in the history, or its recorded outcome when it ran before."""
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        tracing.replayed(options.name, function_id)
        return _Replayed(_replay(ctx, options, recorded))
    return function_id


def _check_due(ctx: TaskContext) -> bool:
    """Whether the task's ownership must be read before this step's body runs."""
    return ctx.confirmed_at is None or time.monotonic() - ctx.confirmed_at > OWNERSHIP_FRESH_SECONDS


def _started(ctx: TaskContext, options: StepOptions, function_id: int) -> _Begun:
    point = {
        "task_id": ctx.task_id,
        "function_id": function_id,
        "step": options.name,
        "attempt": ctx.record.recovery_attempts,
    }
    crashpoint("before_step_body", **point)
    return _Begun(function_id, point, int(time.time() * 1000))


def _failed(ctx: TaskContext, options: StepOptions, begun: _Begun, exc: Exception) -> None:
    error = encode_exception(exc)
    _checkpoint(ctx, begun.function_id, options.name, None, error, begun.started, begun.point)


def _finish(ctx: TaskContext, options: StepOptions, begun: _Begun, value: Any) -> Any:
    what = f"return value of step {options.name!r}"
    tag, text = ctx.engine.codec.dumps(value, what, ctx.record.serialization)
    _checkpoint(ctx, begun.function_id, options.name, text, None, begun.started, begun.point, tag)
    return _as_replayed(ctx, options, tag, text, value)


# Values JSON gives back exactly as they went in (no subclass: an IntEnum comes back an int).
_JSON_EXACT = frozenset({int, float, str, bool, type(None)})


def _as_replayed(ctx: TaskContext, options: StepOptions, tag: str, text: str, value: Any) -> Any:
    """What a replay of the step returns, so the first run and a re-run see the same value:
    its checkpoint decoded, or the value itself where decoding would give it back unchanged."""
    if tag == "json" and type(value) in _JSON_EXACT and "json" in ctx.engine.codec.accept:
        return value
    return ctx.engine.codec.loads(tag, text, f"output of step {options.name!r}")


def _checkpoint(
    ctx: TaskContext,
    function_id: int,
    name: str,
    output: str | None,
    error: str | None,
    started: int,
    point: dict[str, Any],
    tag: str = "json",
) -> None:
    record = _step_record(ctx, function_id, name, output, error, started, tag)

    def write() -> StepWrite:
        crashpoint("after_step_body_before_checkpoint", **point)
        written = ctx.engine.database.record_step(record)
        # Inside the retried call: in raise mode this is the lost reply after a COMMIT, which
        # the retry must recognise (its own row: RECORDED), as a real one would be.
        crashpoint("after_checkpoint_commit", **point)
        return written

    # A retry after a lost COMMIT reply finds its own row and reports RECORDED.
    written = with_database_retry(write, ctx.engine.settings.lease_seconds, "checkpoint", ctx.task_id)
    _recorded(ctx, record, written)


async def _checkpoint_async(
    ctx: TaskContext, begun: _Begun, name: str, output: str | None, error: str | None, tag: str = "json"
) -> None:
    """:func:`_checkpoint` on a shared event loop: the checkpoint joins the group commit and
    is awaited, so the other tasks on the loop run while it is written. The first attempt is
    made here, not through :func:`with_database_retry_async`: every step of every task on the
    loop passes this way, and each coroutine frame is resumed at each of its wake-ups."""
    record = _step_record(ctx, begun.function_id, name, output, error, begun.started, tag)
    database = ctx.engine.database
    started = time.monotonic()
    try:
        crashpoint("after_step_body_before_checkpoint", **begun.point)
        written = await database.record_step_async(record)
        # As in _checkpoint: in raise mode, the lost reply after a COMMIT, which the retry
        # recognises (its own row: RECORDED).
        crashpoint("after_checkpoint_commit", **begun.point)
    except DatabaseUnavailable as exc:
        written = await retry_database_async(
            lambda: _write_async(database, record, begun.point),
            exc,
            started,
            ctx.engine.settings.lease_seconds,
            "checkpoint",
            ctx.task_id,
        )
    _recorded(ctx, record, written)


async def _write_async(database: Any, record: StepRecord, point: dict[str, Any]) -> StepWrite:
    """One more attempt of :func:`_checkpoint_async`'s write, crash points included."""
    crashpoint("after_step_body_before_checkpoint", **point)
    written: StepWrite = await database.record_step_async(record)
    crashpoint("after_checkpoint_commit", **point)
    return written


def _step_record(
    ctx: TaskContext,
    function_id: int,
    name: str,
    output: str | None,
    error: str | None,
    started: int,
    tag: str,
) -> StepRecord:
    return StepRecord(
        task_id=ctx.task_id,
        function_id=function_id,
        function_name=name,
        output=output,
        error=error,
        serialization=tag,
        started_at_epoch_ms=started,
        executor_id=ctx.executor_id,
        claim_token=ctx.record.claim_token,
    )


def _recorded(ctx: TaskContext, record: StepRecord, written: StepWrite) -> None:
    if written is not StepWrite.RECORDED:
        raise TaskAbandoned(ctx.task_id)  # cancelled meanwhile, or no longer ours
    ctx.steps[record.function_id] = record
    ctx.confirmed_at = time.monotonic()


def _replay(ctx: TaskContext, options: StepOptions, recorded: StepRecord) -> Any:
    if recorded.function_name != options.name:
        raise NonDeterminismError(
            f"task {ctx.record.name!r} ({ctx.task_id}) called step {options.name!r} at position "
            f"{recorded.function_id}, but its history has {recorded.function_name!r} there: the "
            "task body must call the same steps in the same order on every run"
        )
    if recorded.error is not None:
        raise decode_exception(recorded.error, ctx.engine.trusted_modules())
    if recorded.output is None:
        return None
    return ctx.engine.codec.loads(recorded.serialization, recorded.output, f"output of step {options.name!r}")
