"""A program embedding Celery's worker and beat, written only against Celery's public API
(``python -m tests.compat.apps.embedded_app``; the database is PGTASKS_DATABASE_URL). It runs,
one after the other in this process:

1. a WorkController stopped (``stop()``) before it serves: it stops once it serves;
2. ``app.Worker`` of the queues ``app.select_queues`` chose (``a``), stopped by a task that
   calls its ``stop()`` (from a pool thread), after a second ``start()`` was refused; it is
   given an option the app added (``app.user_options``);
3. ``app.Beat``, firing ``tick`` (every second) into queue ``b`` until SIGTERM;
4. ``app.WorkController(queues="b")``, ended by a task calling ``terminate()`` (the process
   exits at once, status 1).

Each phase prints a line the test waits for.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import worker_init
from click import Option
from kombu import Queue

app = Celery(
    "embedded",
    broker=os.environ["PGTASKS_DATABASE_URL"],
    task_queues=[Queue("a"), Queue("b")],
    beat_schedule={
        "tick": {"task": "embedded.add", "schedule": 1.0, "args": (1, 1), "options": {"queue": "b"}}
    },
)
app.user_options["worker"].add(Option(("--embedded-note",), help="an option the app adds"))
running: list[Any] = []  # the worker the tasks below stop


@app.task(name="embedded.add")
def add(x: int, y: int) -> int:
    return x + y


@app.task(name="embedded.stop_worker")
def stop_worker() -> str:
    try:
        running[-1].start()  # refused: it runs already
    except RuntimeError as exc:
        refused = str(exc)
    running[-1].stop()
    return refused


@app.task(name="embedded.terminate_worker")
def terminate_worker() -> None:
    running[-1].terminate()


def say(line: str) -> None:
    print(line, flush=True)


def stop_early(**kwargs: Any) -> None:
    running[-1].stop()


if __name__ == "__main__":
    early = app.WorkController(pool="solo", concurrency=1, queues="a", hostname="early@embedded")
    running.append(early)
    worker_init.connect(stop_early, weak=False)
    early.start()
    worker_init.disconnect(stop_early)
    say(f"early exit {early.exitcode}")

    app.select_queues(["a"])
    worker = app.Worker(
        pool="threads", concurrency=2, loglevel="INFO", hostname="first@embedded", embedded_note="taken"
    )
    running.append(worker)
    worker.start()
    say(f"worker exit {worker.exitcode} {worker.hostname}")

    say(f"beat exit {app.Beat(max_interval=0.1, loglevel='INFO').run()}")

    last = app.WorkController(pool="threads", concurrency=1, queues="b", hostname="last@embedded")
    running.append(last)
    last.start()
    say("not reached: terminate() exits the process")
