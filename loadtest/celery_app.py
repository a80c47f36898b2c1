"""The load test's tasks on Celery 5 with Redis (run only by the Celery venv).

The same two shapes as loadtest/app.py: ``loadtest.work`` runs two step bodies that append
to the effects ledger (Celery has no checkpoints), ``loadtest.noop`` does nothing. Each task
marks when it started and ended in Redis, for the latencies; results go to Redis too, for
the producers that wait.
"""

from __future__ import annotations

import os
import time

import redis
from celery import Celery

QUEUE = "loadtest"  # as in loadtest/app.py, which this venv cannot import (no pgtasks)
REDIS_URL = os.environ.get("LOADTEST_REDIS_URL", "redis://127.0.0.1:6379/0")
app = Celery("loadtest_celery", broker=REDIS_URL, backend=REDIS_URL)
app.conf.update(task_default_queue=QUEUE, worker_hijack_root_logger=False, result_expires=3600)
marks = redis.Redis.from_url(REDIS_URL)
_ledger: int | None = None


def _effect(task_id: str, step: int) -> None:
    global _ledger
    if _ledger is None:
        folder = os.environ.get("LOADTEST_LEDGER_DIR", ".")
        path = os.path.join(folder, f"effects-{os.getpid()}.log")
        _ledger = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(_ledger, f"{task_id} {step}\n".encode())


def _mark(key: str, task_id: str) -> None:
    marks.hset(key, task_id, time.time())


@app.task(name="loadtest.work", bind=True)
def work(self, i):  # type: ignore[no-untyped-def]
    _mark("lt:start", self.request.id)
    _effect(self.request.id, 1)
    _effect(self.request.id, 2)
    _mark("lt:end", self.request.id)
    return i


@app.task(name="loadtest.noop", bind=True)
def noop(self, i):  # type: ignore[no-untyped-def]
    _mark("lt:start", self.request.id)
    _mark("lt:end", self.request.id)
    return i
