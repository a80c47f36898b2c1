"""A Celery app with an AbortableTask, as Celery's docs write one."""

from __future__ import annotations

import os
import time

from celery import Celery
from celery.contrib.abortable import AbortableTask

app = Celery("abortable", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task(bind=True, base=AbortableTask)
def long_running(self: AbortableTask) -> str:
    deadline = time.monotonic() + 60
    self.update_state(state="PROGRESS", meta={"looping": True})
    while time.monotonic() < deadline:
        if self.is_aborted():
            return "aborted"
        time.sleep(0.05)
    return "ran to the end"
