"""An application for the Flower API tests: a task that adds, one that fails, one that
waits until it is told to stop (to be seen running, revoked or aborted), and one that sends
another (its child)."""

from __future__ import annotations

import time

from pgtasks import App

app = App("flowerapi", poll_interval=0.05)


@app.task(name="fl.add")
def add(x: int, y: int) -> int:
    return x + y


@app.task(name="fl.fail")
def fail(message: str) -> None:
    raise ValueError(message)


@app.task(name="fl.wait")
def wait(seconds: float) -> str:
    time.sleep(seconds)
    return "waited"


@app.task(name="fl.spawn")
def spawn(x: int) -> str:
    return add.delay(x, x).id
