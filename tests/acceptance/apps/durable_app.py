"""An application run by real `pgtasks worker` subprocesses in the acceptance tests.

Step bodies append a line to the effects ledger (a file named by PGTASKS_TEST_LEDGER) with
O_APPEND, standing in for an external side effect: the line survives a SIGKILL of the
process right after the write.
"""

from __future__ import annotations

import os
import signal
import time

from pgtasks import App
from tests.support.ledger import append

app = App("durable", poll_interval=0.05)


def effect(label: str) -> None:
    append(label)


@app.step
def step_one(x: int) -> int:
    effect("step1")
    return x + 1


@app.step
def step_two(x: int) -> int:
    effect("step2")
    return x * 2


@app.step
def step_three(x: int) -> int:
    effect("step3")
    return x - 3


@app.task(name="durable.three_steps")
def three_steps(x: int) -> int:
    return step_three(step_two(step_one(x)))


@app.task(name="durable.poison", max_recovery_attempts=2)
def poison() -> None:
    effect("poison")
    os.kill(os.getpid(), signal.SIGKILL)


@app.step
def slow_step(i: int) -> int:
    effect(f"slow{i}")
    time.sleep(0.2)
    return i


@app.task(name="durable.slow")
def slow(n: int) -> int:
    return sum(slow_step(i) for i in range(n))


@app.task(name="durable.pid")
def pid() -> int:
    return os.getpid()


_held: list[bytes] = []


@app.task(name="durable.hog")
def hog(mebibytes: int) -> int:
    """Keep ``mebibytes`` of written (resident) memory for the rest of the process; its pid."""
    _held.append(b"x" * (mebibytes << 20))
    return os.getpid()


@app.task(name="durable.sleepy")
def sleepy(seconds: float) -> str:
    time.sleep(seconds)
    return "woke up"


@app.task(name="durable.soft")
def soft(seconds: float) -> str:
    from pgtasks import SoftTimeLimitExceeded

    try:
        time.sleep(seconds)
    except SoftTimeLimitExceeded:
        return "cleaned up after the soft limit"
    return "finished in time"
