"""The Celery-shaped app bench.canvas measures (run by a pgtasks worker)."""

from __future__ import annotations

import os

from pgtasks.compat import install

install()

from celery import Celery  # noqa: E402  (the import hook must come first)

app = Celery("canvasbench", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task(name="canvasbench.inc")
def inc(x: int) -> int:
    return x + 1


@app.task(name="canvasbench.total")
def total(values: list[int]) -> int:
    return sum(values)
