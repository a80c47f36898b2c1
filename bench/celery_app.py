"""The reference: the same no-op task on Celery 5 with Redis as broker (run by the Celery venv).

Each task marks its start in Redis so drain rate and enqueue-to-start latency come from the
same clock as pgtasks' figures (the wall clock of this machine).
"""

from __future__ import annotations

import os
import time

import redis
from celery import Celery

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
app = Celery("bench_celery", broker=REDIS_URL)
app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=4, worker_hijack_root_logger=False)
marks = redis.Redis.from_url(REDIS_URL)


@app.task(name="bench.noop")
def noop(sent_at: float | None = None) -> None:
    now = time.time()
    pipe = marks.pipeline(transaction=False)
    pipe.setnx("bench:first", now)
    pipe.set("bench:last", now)
    pipe.incr("bench:done")
    if sent_at is not None:
        pipe.rpush("bench:waits", (now - sent_at) * 1000)
    pipe.execute()
