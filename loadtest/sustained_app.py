"""The application of the sustained-load run (``loadtest.sustained``).

Four shapes of task; each appends ``<task id> <label>`` to its process's ledger (a file in
``LOADTEST_LEDGER_DIR``) when its body succeeds, and each step body when it runs, so the run
can prove that every task sent finished once and no step ran twice:

- ``sustained.noop``: nothing;
- ``sustained.steps``: three durable steps;
- ``sustained.later``: a no-op sent with a countdown;
- ``sustained.flaky``: fails twice (``RetryRequested``, 0.2 s apart), then succeeds.

``result_expires`` comes from ``SUSTAINED_RESULT_EXPIRES`` (seconds; retention prunes what
finished longer ago).
"""

from __future__ import annotations

import os

from loadtest.ledger import append
from pgtasks import App, RetryRequested, current_task

QUEUE = "sustained"
FLAKY_FAILURES = 2
app = App(
    "sustained",
    poll_interval=0.05,
    default_queue=QUEUE,
    result_expires=float(os.environ.get("SUSTAINED_RESULT_EXPIRES", "300")),
)


def _append(label: str) -> None:
    task = current_task()
    append(f"{task.task_id if task else '-'} {label}\n")


@app.task(name="sustained.noop")
def noop() -> None:
    _append("done")


@app.step
def step(i: int) -> int:
    _append(f"step{i}")
    return i


@app.task(name="sustained.steps")
def steps() -> int:
    total = step(1) + step(2) + step(3)
    _append("done")
    return total


@app.task(name="sustained.later")
def later() -> None:
    _append("done")


@app.task(name="sustained.flaky")
def flaky() -> str:
    task = current_task()
    if task is not None and task.retries < FLAKY_FAILURES:
        raise RetryRequested(countdown=0.2, reason=RuntimeError("not yet"))
    _append("done")
    return "ok"
