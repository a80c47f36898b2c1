"""A Celery app set up as sentry-sdk's documentation says (``CeleryIntegration``), whose
events and transactions go to a file (PGTASKS_TEST_SENTRY) instead of Sentry's servers."""

from __future__ import annotations

import json
import os
from typing import Any

import sentry_sdk
from celery import Celery
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.celery import CeleryIntegration
from sentry_sdk.transport import Transport


class FileTransport(Transport):
    """Appends each envelope item (event, transaction) to the file as one JSON line."""

    def capture_envelope(self, envelope: Envelope) -> None:
        with open(os.environ["PGTASKS_TEST_SENTRY"], "a") as sink:
            for item in envelope.items:
                payload: Any = item.payload.json
                if payload is not None:
                    sink.write(json.dumps({"type": item.type, "payload": payload}, default=str) + "\n")


sentry_sdk.init(
    dsn="https://public@sentry.invalid/1",
    integrations=[CeleryIntegration()],
    traces_sample_rate=1.0,
    transport=FileTransport,
)

app = Celery("sentried", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task
def add(x: int, y: int) -> int:
    return x + y


@app.task
def divide(x: int, y: int) -> float:
    return x / y
