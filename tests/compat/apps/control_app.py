"""An application's own remote control commands (Celery's "Writing your own remote control
commands"), written only against Celery's public API."""

from __future__ import annotations

import os

from celery import Celery
from celery.worker.control import control_command, inspect_command

app = Celery("control", broker=os.environ.get("PGTASKS_DATABASE_URL"))
COUNTERS: dict[str, int] = {}  # by worker name, in the worker's process


@control_command(args=[("n", int)], signature="[N=1]")
def increase_counter(state, n=1):  # type: ignore[no-untyped-def]
    """Add N to the worker's counter."""
    COUNTERS[state.hostname] = COUNTERS.get(state.hostname, 0) + n
    return {"ok": f"counter is {COUNTERS[state.hostname]}"}


@inspect_command(alias="counter_now")
def current_counter(state):  # type: ignore[no-untyped-def]
    """The worker's counter."""
    return {
        "counter": COUNTERS.get(state.hostname, 0),
        "app": state.app.main,
        "same": state.consumer.app is state.app,
    }


@control_command()
def broken_command(state):  # type: ignore[no-untyped-def]
    raise RuntimeError("the command failed")


@inspect_command()
def consumer_internals(state):  # type: ignore[no-untyped-def]
    return state.consumer.qos.value  # Celery's consumer internals: pgtasks' worker has none


@app.task
def add(x: int, y: int) -> int:
    return x + y
