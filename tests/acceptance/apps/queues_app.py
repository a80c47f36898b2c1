"""An application that declares a queue whose limit comes from the environment, for the
tests of who wins between `pgtasks queue set` and `app.queue(...)`."""

from __future__ import annotations

import os

from pgtasks import App

app = App("queues", poll_interval=0.05)
app.queue("tuned", concurrency=int(os.environ.get("TUNED_CONCURRENCY", "2")), worker_concurrency=3)


@app.task(name="queues.ping", queue="tuned")
def ping() -> str:
    return "pong"


@app.task(name="queues.other", queue="other")
def other() -> str:
    return "other"
