"""A Celery app that asks not to wait for its broker at start-up."""

from __future__ import annotations

import os

from celery import Celery

app = Celery("noretry", broker=os.environ.get("PGTASKS_DATABASE_URL"))
app.conf.broker_connection_retry_on_startup = False


@app.task
def add(x: int, y: int) -> int:
    return x + y
