"""A Celery app whose settings come from the JSON object in APP_SETTINGS (name: value), to
start a worker with each bad (or odd) value of a worker setting."""

from __future__ import annotations

import json
import os

from celery import Celery

app = Celery("settings", broker=os.environ.get("PGTASKS_DATABASE_URL"))
for name, value in json.loads(os.environ.get("APP_SETTINGS", "{}")).items():
    setattr(app.conf, name, value)


@app.task(name="settings.ping")
def ping() -> str:
    return "pong"


@app.task(name="settings.pid")
def pid() -> int:
    """The pid of the process that ran it (a prefork child: replaced or not)."""
    return os.getpid()
