"""An app whose tasks ignore their results by default (``task_ignore_result``): written only
against Celery's API."""

from __future__ import annotations

import os

from celery import Celery

from tests.compat.apps.ledger import note

app = Celery("ignoring", broker=os.environ.get("PGTASKS_DATABASE_URL"))
app.conf.task_ignore_result = True


@app.task
def echo(value):
    note("echo", value)
    return value
