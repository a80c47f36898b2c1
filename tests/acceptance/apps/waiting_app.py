"""Tasks that wait durably (docs/waiting.md), run by real worker processes in
tests/acceptance/test_waiting.py. Effects go to the ledger (tests/support/ledger.py)."""

from __future__ import annotations

from typing import Any

import pgtasks
from pgtasks import App
from tests.support.ledger import append

app = App("waiting", poll_interval=0.05)


@app.step
def mark(label: str) -> None:
    """An effect recorded as a step: a re-run of the task replays it instead of repeating it."""
    append(label)


@app.task(name="waiting.sleeper")
def sleeper(seconds: float) -> str:
    mark("before")
    pgtasks.sleep(seconds)
    mark("after")
    current = pgtasks.current_task()
    return current.executor_id if current else ""


@app.task(name="waiting.nap")
def nap(seconds: float) -> int:
    """Only a sleep: the least a waiting task costs (two claims, one suspension)."""
    pgtasks.sleep(seconds)
    return 1


@app.task(name="waiting.async_receiver")
async def async_receiver(topic: str, timeout: float) -> Any:
    """The async calls, on the asyncio pool's shared loop or on a task's own loop."""
    got = await pgtasks.recv_async(topic, timeout=timeout)
    await pgtasks.set_event_async("got", got)
    await pgtasks.sleep_async(0.6)
    return got


@app.task(name="waiting.receiver")
def receiver(topic: str | None, timeout: float, count: int = 1) -> list[Any]:
    got = [pgtasks.recv(topic, timeout=timeout) for _ in range(count)]
    append("received", str(len(got)))
    return got


@app.task(name="waiting.publisher")
def publisher(steps: int, pause: float) -> int:
    for i in range(steps):
        pgtasks.set_event("progress", i)
        pgtasks.write_stream("out", {"i": i})
        pgtasks.sleep(pause)
    pgtasks.close_stream("out")
    return steps


@app.task(name="waiting.event_waiter")
def event_waiter(task_id: str, key: str, timeout: float) -> Any:
    return pgtasks.get_event(task_id, key, timeout=timeout)


@app.task(name="waiting.messenger")
def messenger(destination: str, message: Any) -> bool:
    return pgtasks.send(destination, message, topic="from-task")
