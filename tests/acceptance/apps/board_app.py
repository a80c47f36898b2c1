"""An application for the dashboard tests: a task with steps and a secret argument, and one
that fails with a traceback."""

from __future__ import annotations

import pgtasks
from pgtasks import App

app = App("board", poll_interval=0.05)


@app.step
def double(x: int) -> int:
    return x * 2


@app.step
def describe(x: int) -> str:
    return f"value {x}"


@app.task(name="board.work", secret_args=("token",))
def work(x: int, token: str = "") -> str:
    doubled = double(x)
    pgtasks.set_event("doubled", doubled)  # shown on the task's page
    return describe(doubled)


@app.task(name="board.fail")
def fail(message: str) -> None:
    raise ValueError(message)
