"""A Celery app instrumented by opentelemetry-instrumentation-celery (``CeleryInstrumentor``),
exporting its spans to the file named by PGTASKS_TEST_SPANS. ``skip_dep_check=True``: the
celery distribution, which the instrumentor looks for, is not installed (pgtasks serves the
module)."""

from __future__ import annotations

import os

from celery import Celery
from opentelemetry.instrumentation.celery import CeleryInstrumentor

from tests.support.tracing import export_to_file_from_env

export_to_file_from_env()
CeleryInstrumentor().instrument(skip_dep_check=True)

app = Celery("otel-instrumented", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task
def add(x: int, y: int) -> int:
    return x + y


@app.task
def divide(x: int, y: int) -> float:
    return x / y
