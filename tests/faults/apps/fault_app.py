"""The application the fault tests' worker subprocesses run.

Every step body records its execution in the effects ledger (:func:`tests.faults.invariants.effect`)
and every task body its start and end (:func:`~tests.faults.invariants.span`), so that
:func:`tests.faults.invariants.check` can count executions and concurrency afterwards.
The queue ``limited`` runs at most two tasks at once across all workers; the queue
``metered`` starts at most four tasks per second across all workers. The schedule
``soak-tick`` (for `pgtasks beat` in the soak) fires a one-step task every second.
"""

from __future__ import annotations

import os
import resource
import signal
import time

from pgtasks import App
from pgtasks.scheduler import define_schedule
from tests.faults.invariants import effect, span

LIMITED_QUEUE = "limited"
LIMITED_CONCURRENCY = 2
METERED_QUEUE = "metered"
METERED_RATE = (4, 1.0)  # starts per period (seconds)

app = App("faults", poll_interval=0.05)
app.queue(LIMITED_QUEUE, concurrency=LIMITED_CONCURRENCY)
app.queue(METERED_QUEUE, rate_limit=METERED_RATE)
TICK_SCHEDULE, TICK_CRON = "soak-tick", "* * * * * *"
app.add_schedule_source(
    lambda: [
        define_schedule(TICK_SCHEDULE, "faults.steps", cron=TICK_CRON, args=(1,), automatic_backfill=True)
    ]
)


@app.step
def work(i: int, seconds: float) -> int:
    effect(f"work{i}")
    if seconds:
        time.sleep(seconds)  # the step's own duration, so that faults land inside it
    return i


@app.task(name="faults.steps")
def steps(n: int = 3, seconds: float = 0.0) -> int:
    """``n`` checkpointed steps of ``seconds`` each; returns 0 + 1 + ... + (n - 1)."""
    span("start")
    total = sum(work(i, seconds) for i in range(n))
    span("end")
    return total


@app.step
def die() -> None:
    effect("die")
    os.kill(os.getpid(), signal.SIGKILL)


@app.task(name="faults.suicide", max_recovery_attempts=2)
def suicide() -> None:
    """Kills the process running it, every time (a poison task)."""
    die()


@app.task(name="faults.hog")
def hog(megabytes: int) -> int:
    """Caps this process's address space 64 MiB above its current size, then allocates
    ``megabytes``: more than that raises MemoryError. The cap is lifted again afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + (64 << 20), hard))
    try:
        return len(bytearray(megabytes << 20))
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space() -> int:
    """This process's virtual memory size in bytes (VmSize)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


@app.task(name="faults.pid")
def pid() -> int:
    return os.getpid()
