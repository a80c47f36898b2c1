"""The application the benchmarks drain: a no-op task and a task of three durable steps."""

from __future__ import annotations

import asyncio

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


@app.task(name="bench.async_noop")
async def async_noop() -> None:
    return None


@app.task(name="bench.async_sleep")
async def async_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


@app.step
async def async_step(i: int) -> int:
    return i


@app.task(name="bench.async_three_steps")
async def async_three_steps() -> int:
    return await async_step(1) + await async_step(2) + await async_step(3)
