"""What the tracing hooks cost per task: send + run + one step, without a provider, with the
SDK recording to memory, and with tracing switched off. `python -m bench.tracing_overhead`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from pgtasks.engine import tracing
from pgtasks.sysdb.records import NewTask, Status, TaskRecord

N = 20_000


def _record() -> TaskRecord:
    return TaskRecord("t", Status.PENDING, "bench.task", "{}", "json", "default")


def _per_task() -> Callable[[], None]:
    task = NewTask("t", "bench.task", "{}", "default")
    record = _record()

    def one() -> None:
        with tracing.sending(["bench.task"]) as stamp:
            stamp(task)
        with tracing.running(record, "w1") as span:
            with tracing.stepping("s", 1, "t"):
                pass
            span.note("done")

    return one


def _measure(label: str) -> None:
    one = _per_task()
    for _ in range(1000):
        one()
    started = time.perf_counter()
    for _ in range(N):
        one()
    print(f"{label:<40} {(time.perf_counter() - started) / N * 1e6:8.1f} µs per task")


def main() -> None:
    _measure("API installed, no provider")
    from tests.support.tracing import spans_in_memory

    with spans_in_memory() as exporter:
        _measure("SDK, spans kept in memory")
        exporter.clear()
        os.environ["PGTASKS_TRACING"] = "off"
        tracing.reset()
        _measure("SDK, PGTASKS_TRACING=off")


if __name__ == "__main__":
    main()
