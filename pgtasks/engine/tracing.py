"""OpenTelemetry spans for sending, running and stepping through tasks, when the application
has configured a tracer provider.

pgtasks depends only on ``opentelemetry-api`` (the ``pgtasks[tracing]`` extra), imported the
first time a task is sent or run, never when it is not installed. Without a configured
provider (the API alone, or ``PGTASKS_TRACING=off``) every hook here is a no-op that costs
a global lookup and writes nothing to the database. The API's answer is kept: a provider
found is used from then on (the API sets it once per process), and the absence of one is
asked again at most once a second (a provider configured after the first task is used from
the next second on).

With a provider:
- sending opens a PRODUCER span ``send <task name>`` (one per call: a bulk send or a canvas
  is one span) and stores its context, W3C ``traceparent`` as the configured propagator
  writes it, in each task's ``meta`` under ``"trace"``;
- running opens a CONSUMER span ``run <task name>`` whose parent is that context, in the
  worker's process, current while the task body runs; a failure is recorded on it;
- each executed ``@app.step`` is an INTERNAL span ``step <step name>`` under the task's span.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from pgtasks.sysdb.records import NewTask, TaskRecord

TRACE_KEY = "trace"
DISABLED_VALUES = ("0", "off", "false", "no")

_api: Any = None  # the opentelemetry modules once imported; False when unavailable
NO_PROVIDER_RECHECK_SECONDS = 1.0
# The tracer last found (None: no provider) and when to ask the API again if None. Asking costs
# an environment lookup in the API: too much for every step of every task.
_found: tuple[Any, float] | None = None


def _tracer() -> Any:
    """The pgtasks tracer when spans would be recorded somewhere, else None."""
    global _found
    found = _found
    if found is not None and (found[0] is not None or time.monotonic() < found[1]):
        return found[0]
    tracer = _find_tracer()
    _found = (tracer, time.monotonic() + NO_PROVIDER_RECHECK_SECONDS)
    return tracer


def load_api() -> None:
    """Import the OpenTelemetry API now, where it is installed and tracing is not off, rather
    than in the first task that runs. A worker calls this as it starts: the import takes 20-45
    ms on this project's 2-core machine, which its first task (on the asyncio pool, every
    coroutine of the loop) would otherwise wait. Whether a provider is set is still asked
    when tasks run."""
    global _api
    if _api is None:
        _api = _import_api()


def _find_tracer() -> Any:
    load_api()
    if _api is False:
        return None
    trace = _api.trace
    provider = trace.get_tracer_provider()
    # The API's own providers record nothing: skip the span machinery altogether.
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider.get_tracer("pgtasks")


def _import_api() -> Any:
    if os.environ.get("PGTASKS_TRACING", "").strip().lower() in DISABLED_VALUES:
        return False
    try:
        # why: optional dependency, imported only where tracing may be used
        from opentelemetry import propagate, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode
    except ImportError:
        return False

    class Api:
        pass

    api = Api()
    api.trace = trace  # type: ignore[attr-defined]
    api.propagate = propagate  # type: ignore[attr-defined]
    api.SpanKind = SpanKind  # type: ignore[attr-defined]
    api.Status = Status  # type: ignore[attr-defined]
    api.StatusCode = StatusCode  # type: ignore[attr-defined]
    return api


def reset() -> None:
    """Forget whether tracing is available and the tracer found (tests that change
    ``PGTASKS_TRACING`` or the provider)."""
    global _api, _found
    _api = None
    _found = None


def _stamped(task: NewTask, carrier: dict[str, str]) -> NewTask:
    """``task`` with the producer's trace context added to its meta (a JSON object)."""
    meta: dict[str, Any] = {}
    if task.meta:
        loaded = json.loads(task.meta)
        if isinstance(loaded, dict):
            meta = loaded
    meta[TRACE_KEY] = carrier
    return task._replace(meta=json.dumps(meta, separators=(",", ":")))


def unchanged(task: NewTask) -> NewTask:
    """The stamp of a send that is not traced: the task as it is."""
    return task


@contextmanager
def sending(names: Sequence[str]) -> Iterator[Callable[[NewTask], NewTask]]:
    """The span of one send of the tasks named ``names``; yields the function that stamps
    each built task with the span's context (the identity when not tracing)."""
    tracer = _tracer()
    if tracer is None or not names:
        yield unchanged
        return
    api = _api
    distinct = sorted(set(names))
    name = f"send {distinct[0]}" if len(distinct) == 1 else "send"
    attributes: dict[str, Any] = {
        "messaging.system": "pgtasks",
        "messaging.operation": "publish",
        "messaging.batch.message_count": len(names),
    }
    if len(distinct) == 1:
        attributes["pgtasks.task.name"] = distinct[0]
    with tracer.start_as_current_span(name, kind=api.SpanKind.PRODUCER, attributes=attributes) as span:
        carrier: dict[str, str] = {}
        api.propagate.inject(carrier)
        single = len(names) == 1

        def stamp(task: NewTask) -> NewTask:
            if single:
                span.set_attribute("messaging.message.id", task.task_id)
                span.set_attribute("messaging.destination.name", task.queue_name)
            return _stamped(task, carrier) if carrier else task

        yield stamp


class TaskSpan:
    """What the running task reports to its span; every method is a no-op without one."""

    def __init__(self, span: Any = None) -> None:
        self._span = span

    def failed(self, exc: BaseException) -> None:
        """Record ``exc`` as the task's failure."""
        if self._span is not None:
            self._span.record_exception(exc)
            self._span.set_status(_api.Status(_api.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))

    def retrying(self, countdown: float, reason: BaseException | None) -> None:
        """The task asked to run again in ``countdown`` seconds."""
        if self._span is not None:
            attributes: dict[str, Any] = {"pgtasks.retry.countdown_s": countdown}
            if reason is not None:
                attributes["exception.type"] = type(reason).__name__
            self._span.add_event("retry", attributes)

    def note(self, event: str) -> None:
        """An event on the task's span (released, abandoned)."""
        if self._span is not None:
            self._span.add_event(event)


# Without a tracer, running and stepping hand out these shared no-op contexts: no generator
# per task and per step (the asyncio pool runs thousands of steps a second on one thread).
_NO_TASK_SPAN = nullcontext(TaskSpan())
_NO_STEP_SPAN = nullcontext()


def _parent_context(meta: str | None) -> Any:
    if not meta or TRACE_KEY not in meta:  # no producer's context stored: no JSON to read
        return None
    try:
        loaded = json.loads(meta)
    except ValueError:
        return None
    carrier = loaded.get(TRACE_KEY) if isinstance(loaded, dict) else None
    if not isinstance(carrier, dict):
        return None
    return _api.propagate.extract({str(k): str(v) for k, v in carrier.items()})


def running(record: TaskRecord, executor_id: str) -> AbstractContextManager[TaskSpan]:
    """The span of one run of a claimed task, current while its body runs; its parent is the
    span that sent the task, read from the task's meta."""
    tracer = _tracer()
    if tracer is None:
        return _NO_TASK_SPAN
    return _task_span(tracer, record, executor_id)


@contextmanager
def _task_span(tracer: Any, record: TaskRecord, executor_id: str) -> Iterator[TaskSpan]:
    attributes = {
        "messaging.system": "pgtasks",
        "messaging.operation": "process",
        "messaging.destination.name": record.queue_name,
        "messaging.message.id": record.task_id,
        "pgtasks.task.name": record.name,
        "pgtasks.task.retries": record.retries,
        "pgtasks.task.recovery_attempt": record.recovery_attempts,
        "pgtasks.executor_id": executor_id,
    }
    with tracer.start_as_current_span(
        f"run {record.name}",
        context=_parent_context(record.meta),
        kind=_api.SpanKind.CONSUMER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield TaskSpan(span)


def stepping(step: str, function_id: int, task_id: str) -> AbstractContextManager[None]:
    """The span of one executed step of the running task (a replayed step has none)."""
    tracer = _tracer()
    if tracer is None:
        return _NO_STEP_SPAN
    return _step_span(tracer, step, function_id, task_id)


@contextmanager
def _step_span(tracer: Any, step: str, function_id: int, task_id: str) -> Iterator[None]:
    attributes = {
        "pgtasks.step.name": step,
        "pgtasks.step.function_id": function_id,
        "pgtasks.task.id": task_id,
    }
    with tracer.start_as_current_span(f"step {step}", kind=_api.SpanKind.INTERNAL, attributes=attributes):
        yield


def replayed(step: str, function_id: int) -> None:
    """Mark on the current span that a step's recorded output was returned, not re-run."""
    if _tracer() is None:
        return
    span = _api.trace.get_current_span()
    span.add_event("step replayed", {"pgtasks.step.name": step, "pgtasks.step.function_id": function_id})
