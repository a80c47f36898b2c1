"""The application the load test's workers run.

``loadtest.work`` has two durable steps; each step body appends ``<task id> <step>`` to this
process's effects ledger (a file in ``LOADTEST_LEDGER_DIR``, written with one ``write`` per
line), standing in for an external side effect, so the summary can prove that no step ran
twice. ``loadtest.noop`` is the cheapest task, for bursts.
"""

from __future__ import annotations

from loadtest.ledger import append
from pgtasks import App, current_task

QUEUE = "loadtest"
app = App("loadtest", poll_interval=0.05, default_queue=QUEUE)


@app.step
def effect(step: int) -> int:
    task = current_task()
    append(f"{task.task_id if task else '-'} {step}\n")
    return step


@app.task(name="loadtest.work")
def work(i: int) -> int:
    return effect(1) + effect(2) + i


@app.task(name="loadtest.noop")
def noop(i: int) -> int:
    return i
