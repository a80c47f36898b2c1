"""A Celery app whose task stops in Celery's remote debugger (the Debugging guide's example),
for tests/compat/test_remote_debugger.py."""

from __future__ import annotations

import os

from celery import Celery
from celery.contrib import rdb

app = Celery("rdb_app", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task(name="rdb_app.add")
def add(x: int, y: int) -> int:
    result = x + y
    rdb.set_trace()
    return result + 1  # `result` is what the session prints; the task goes on after it
