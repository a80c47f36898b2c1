"""A Celery app whose worker_prefetch_multiplier comes from PREFETCH_MULTIPLIER (a number, or
text to see it refused; unset: the app leaves the setting alone)."""

from __future__ import annotations

import os
import time

from celery import Celery

app = Celery("prefetch", broker=os.environ.get("PGTASKS_DATABASE_URL"))
raw = os.environ.get("PREFETCH_MULTIPLIER")
if raw is not None:
    app.conf.worker_prefetch_multiplier = int(raw) if raw.isdigit() else raw


@app.task(name="prefetch.nap")
def nap(seconds: float) -> str:
    time.sleep(seconds)
    return "rested"


@app.task(name="prefetch.brief")
def brief() -> None:
    return None
