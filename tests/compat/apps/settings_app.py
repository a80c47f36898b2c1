"""A Celery app whose settings come from the JSON object in APP_SETTINGS (name: value), to
start a worker with each bad (or odd) value of a worker setting."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import zoneinfo

from celery import Celery, Task, chain
from celery.utils.log import get_task_logger

if os.environ.get("APP_ROOT_HANDLER"):  # the application's own logging (Django's LOGGING, say)
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("APP-HANDLER %(message)s"))
    logging.getLogger().addHandler(_handler)

app = Celery("settings", broker=os.environ.get("PGTASKS_DATABASE_URL"))
for name, value in json.loads(os.environ.get("APP_SETTINGS", "{}")).items():
    setattr(app.conf, name, value)
if os.environ.get("APP_ZONEINFO"):  # a timezone given as a tzinfo, which JSON cannot carry
    app.conf.timezone = zoneinfo.ZoneInfo(os.environ["APP_ZONEINFO"])


@app.task(name="settings.ping")
def ping() -> str:
    return "pong"


@app.task(name="settings.pid")
def pid() -> int:
    """The pid of the process that ran it (a prefork child: replaced or not)."""
    return os.getpid()


@app.task(name="settings.talk")
def talk() -> str:
    """Print a line and log one on the task's logger."""
    print("printed by talk")
    get_task_logger(__name__).warning("logged by talk")
    return "said"


@app.task(name="settings.nap")
def nap(seconds: float) -> str:
    """Sleep ``seconds`` (a task still running when the worker is asked to stop)."""
    time.sleep(seconds)
    return "rested"


@app.task(name="settings.priority", bind=True)
def priority(self: Task, *previous: object) -> int | None:
    """The priority this task was sent with (Celery's ``delivery_info['priority']``)."""
    return (self.request.delivery_info or {}).get("priority")


@app.task(name="settings.spawn")
def spawn() -> list[str]:
    """Send tasks from inside a task, each way Celery sends one; their ids, in order."""
    chained = chain(priority.s(), priority.s()).apply_async()
    return [
        priority.delay().id,
        app.send_task("settings.priority").id,
        priority.apply_async(priority=2).id,
        chained.parent.id,
        chained.id,
    ]
