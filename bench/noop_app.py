"""The application the benchmarks drain: a no-op task and a task of three durable steps."""

from __future__ import annotations

from pgtasks import App

app = App("bench", poll_interval=0.01)


@app.task(name="bench.noop")
def noop() -> None:
    return None


@app.step
def step(i: int) -> int:
    return i


@app.task(name="bench.three_steps")
def three_steps() -> int:
    return step(1) + step(2) + step(3)
