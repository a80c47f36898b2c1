"""Durable steps: run once, checkpoint the output, replay the checkpoint on re-execution."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pgtasks.engine import tracing
from pgtasks.engine.context import TaskContext, running_context
from pgtasks.engine.crashpoints import crashpoint
from pgtasks.engine.errors import ConfigurationError, NonDeterminismError, TaskAbandoned
from pgtasks.engine.failures import decode_exception, encode_exception
from pgtasks.engine.retry import with_database_retry
from pgtasks.sysdb.records import StepRecord, StepWrite

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
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigurationError(f"step {self.name!r}: retries must be an integer >= 0")
        for field_name, low in (("backoff", 0.0), ("backoff_rate", 1.0), ("max_backoff", 0.0)):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigurationError(f"step {self.name!r}: {field_name} must be a finite number")
            if value < low:
                raise ConfigurationError(f"step {self.name!r}: {field_name} must be >= {low}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        try:
            return float(min(self.max_backoff, self.backoff * self.backoff_rate ** (attempt - 1)))
        except OverflowError:
            return float(self.max_backoff)


def run_step(
    options: StepOptions, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Run ``fn`` as the next step of the current task; outside a task, just call it."""
    ctx = running_context()
    if ctx is None:
        return fn(*args, **kwargs)
    begun = _begin(ctx, options)
    if isinstance(begun, _Replayed):
        return begun.value
    attempt = 0
    with tracing.stepping(options.name, begun.function_id, ctx.task_id):
        while True:
            try:
                value = fn(*args, **kwargs)
                break
            except Exception as exc:
                if attempt < options.retries:
                    attempt += 1
                    time.sleep(options.delay(attempt))
                    continue
                _failed(ctx, options, begun, exc)
                raise
    return _finish(ctx, options, begun, value)


async def run_step_async(
    options: StepOptions, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """:func:`run_step` for an ``async def`` step: the body is awaited, the checkpoint is the
    same (written from the task's own event loop: one task per loop, see execution.py)."""
    ctx = running_context()
    if ctx is None:
        return await fn(*args, **kwargs)
    begun = _begin(ctx, options)
    if isinstance(begun, _Replayed):
        return begun.value
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
                _failed(ctx, options, begun, exc)
                raise
    return _finish(ctx, options, begun, value)


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
    function_id = ctx.take_function_id()
    recorded = ctx.steps.get(function_id)
    if recorded is not None:
        tracing.replayed(options.name, function_id)
        return _Replayed(_replay(ctx, options, recorded))
    engine = ctx.engine
    if ctx.confirmed_at is None or time.monotonic() - ctx.confirmed_at > OWNERSHIP_FRESH_SECONDS:
        owned = with_database_retry(
            lambda: engine._sysdb.task_owned_by(ctx.task_id, ctx.executor_id, ctx.record.claim_token),
            engine.settings.lease_seconds,
            "ownership check",
            ctx.task_id,
        )
        if not owned:
            raise TaskAbandoned(ctx.task_id)  # cancelled, or another executor took it over
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
    # Hand back what a replay would return, so the first run and a re-run see the same value.
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
    record = StepRecord(
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

    def write() -> StepWrite:
        crashpoint("after_step_body_before_checkpoint", **point)
        written = ctx.engine.record_step(record)
        # Inside the retried call: in raise mode this is the lost reply after a COMMIT, which
        # the retry must recognise (its own row: RECORDED), as a real one would be.
        crashpoint("after_checkpoint_commit", **point)
        return written

    # A retry after a lost COMMIT reply finds its own row and reports RECORDED.
    written = with_database_retry(write, ctx.engine.settings.lease_seconds, "checkpoint", ctx.task_id)
    if written is not StepWrite.RECORDED:
        raise TaskAbandoned(ctx.task_id)  # cancelled meanwhile, or no longer ours
    ctx.steps[function_id] = record
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
