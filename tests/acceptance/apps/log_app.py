"""An application for the log tests: tasks that log through ``get_task_logger`` and a plain
logger, return a small or a very long result, fail, and retry once."""

from __future__ import annotations

import logging
import os

from pgtasks import App, RetryRequested, current_task
from pgtasks.compat.celery.utils.log import get_task_logger

if os.environ.get("LOG_APP_CONFIGURES_LOGGING"):  # an application that sets logging up itself
    logging.basicConfig(level=logging.INFO)

app = App("logs", poll_interval=0.05)
task_log = get_task_logger(__name__)
plain_log = logging.getLogger("logs.plain")


@app.task(name="logs.add")
def add(x: int, y: int) -> int:
    task_log.info("adding %s and %s", x, y)
    plain_log.warning("a plain logger inside the task")
    return x + y


@app.task(name="logs.long")
def long() -> str:
    return "x" * 5000


@app.task(name="logs.fail")
def fail(message: str) -> None:
    raise ValueError(message)


@app.task(name="logs.retry")
def retry() -> str:
    ctx = current_task()
    if ctx is not None and ctx.retries == 0:
        raise RetryRequested(countdown=0.5, reason=ValueError("the line is busy"))
    return "done"
