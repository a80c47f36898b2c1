"""``async def`` tasks and steps, run by real `pgtasks worker` subprocesses. Step bodies append
to the effects ledger, so a test sees which ran and how often."""

from __future__ import annotations

import asyncio

from pgtasks import App
from tests.support.ledger import append

app = App("async-durable", poll_interval=0.05)


@app.step(name="fetch")
async def fetch(x: int) -> int:
    await asyncio.sleep(0.01)
    append("fetch")
    return x + 1


@app.step(name="score")
async def score(x: int) -> int:
    append("score")
    return x * 2


@app.step(name="sync_step")
def sync_step(x: int) -> int:
    append("sync")
    return x - 3


@app.task(name="aio.pipeline")
async def pipeline(x: int) -> int:
    fetched = await fetch(x)
    scored = await score(fetched)
    return sync_step(scored)


@app.task(name="aio.gather")
async def gather(n: int) -> list[int]:
    async def one(i: int) -> int:
        await asyncio.sleep(0.05)
        return i

    return list(await asyncio.gather(*(one(i) for i in range(n))))


@app.task(name="aio.fails")
async def fails() -> None:
    await asyncio.sleep(0)
    raise LookupError("not found upstream")


@app.task(name="aio.waits")
async def waits() -> str:
    for _ in range(600):
        await fetch(0)  # a step per round: a revoke stops it at the next one
        await asyncio.sleep(0.05)
    return "done"


_arrived = 0


@app.task(name="aio.barrier")
async def barrier(n: int) -> int:
    """Returns only once ``n`` of these run at the same time on this worker's event loop (a
    pool that ran them one by one, or on too few slots, would time out instead)."""
    global _arrived
    _arrived += 1
    for _ in range(3000):
        if _arrived >= n:
            return n
        await asyncio.sleep(0.01)
    raise TimeoutError(f"only {_arrived} of {n} tasks ran at once")


@app.task(name="aio.sync_add")
def sync_add(x: int, y: int) -> int:
    append("sync_add")
    return x + y


@app.task(name="aio.sleeps")
async def sleeps(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


@app.task(name="aio.cleans_up")
async def cleans_up(seconds: float) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:  # the soft time limit: clean up and return
        append("cleaned")
        return "cleaned up"
    return "slept"


@app.task(name="aio.on_other_queue", queue="cpu")
def on_other_queue(x: int) -> int:
    return x * 10
