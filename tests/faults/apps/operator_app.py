"""The application of the operator-fault tests (tests/faults/test_operator_faults.py): steps
that record each run of their body in the effects ledger, a task that returns what it was
given, and async tasks for the asyncio pool, one of which blocks its event loop."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pgtasks import App
from tests.support.ledger import append

app = App("operator", poll_interval=0.05)


@app.step
def work(i: int, seconds: float) -> int:
    append(f"work{i}")
    time.sleep(seconds)
    return i


@app.task(name="ops.steps")
def steps(n: int = 3, seconds: float = 0.0) -> int:
    """``n`` checkpointed steps of ``seconds`` each; returns 0 + 1 + ... + (n - 1)."""
    append("start")
    return sum(work(i, seconds) for i in range(n))


@app.task(name="ops.echo")
def echo(value: Any) -> Any:
    return value


@app.task(name="ops.type_of")
def type_of(value: Any) -> str:
    return type(value).__name__


@app.task(name="ops.block_loop")
async def block_loop(seconds: float) -> str:
    """Blocks the event loop it runs on: a sync sleep inside ``async def``."""
    append("blocking")
    time.sleep(seconds)
    append("unblocked")
    return "done"


@app.task(name="ops.nap")
async def nap(seconds: float) -> str:
    append("nap")
    await asyncio.sleep(seconds)
    return "rested"
