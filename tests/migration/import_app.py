"""The Celery app that runs the imported tasks (pgtasks' Celery layer)."""

from __future__ import annotations

import os

from celery import Celery

app = Celery("imported", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task(name="imp.add")
def add(x: int, y: int) -> int:
    return x + y
