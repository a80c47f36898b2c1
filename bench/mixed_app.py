"""The application of :mod:`bench.mixed_queue`: a no-op task and a slow one."""

from __future__ import annotations

import time

from pgtasks import App

app = App("mixed", poll_interval=0.05)


@app.task(name="mixed.noop")
def noop() -> None:
    return None


@app.task(name="mixed.slow")
def slow(seconds: float) -> None:
    time.sleep(seconds)
