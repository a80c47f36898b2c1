"""An application for the worker metrics tests: a task that succeeds, one that fails, and one
that asks to run again twice before it succeeds."""

from __future__ import annotations

from pgtasks import App, RetryRequested, current_task

app = App("metered", poll_interval=0.05)


@app.task(name="metered.ok")
def ok(x: int) -> int:
    return x + 1


@app.task(name="metered.fail")
def fail(message: str) -> None:
    raise ValueError(message)


@app.task(name="metered.flaky")
def flaky(times: int) -> str:
    task = current_task()
    assert task is not None
    if task.retries < times:
        raise RetryRequested(countdown=0)
    return f"after {task.retries} retries"
