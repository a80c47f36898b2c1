"""Tasks for tests/compat/test_task_guide.py: the entries of Celery's "Tasks" and "Calling
Tasks" guides where pgtasks once did otherwise than Celery 5.5 (a ``Retry`` raised by the body
itself, a ``countdown`` or ``expires`` below zero, a task killed at its hard time limit).
Written against Celery's API only; each run, handler and signal notes itself in the ledger
(``PGTASKS_TEST_LEDGER``)."""

from __future__ import annotations

import os
import time
from typing import Any

from celery import Celery, Task
from celery.exceptions import Ignore, Retry
from celery.signals import task_failure, task_postrun, task_retry

from tests.compat.apps.ledger import note

app = Celery("task_guide", broker=os.environ.get("PGTASKS_DATABASE_URL"))


class Noting(Task):
    """Notes its ``on_retry`` and ``on_failure`` calls."""

    def on_retry(self, exc: Any, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        note("on_retry", task_id)

    def on_failure(self, exc: Any, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        note("on_failure", task_id)


def _ours(sender: Any) -> bool:
    """The signals are global: note only those of this module's tasks (other test modules
    run tasks in this process, with the same ledger variable)."""
    return str(getattr(sender, "name", "")).startswith(__name__ + ".")


@task_retry.connect
def noted_retry(sender: Any = None, request: Any = None, **kwargs: Any) -> None:
    if _ours(sender):
        note("task_retry", getattr(request, "id", None))


@task_failure.connect
def noted_failure(sender: Any = None, task_id: str = "", exception: Any = None, **kwargs: Any) -> None:
    if _ours(sender):
        note("task_failure", task_id, type(exception).__name__)


@task_postrun.connect
def noted_postrun(sender: Any = None, task_id: str = "", state: Any = None, **kwargs: Any) -> None:
    if _ours(sender):
        note("task_postrun", task_id, state)


@app.task(bind=True, base=Noting)
def raises_retry(self: Any) -> None:
    """Raises Celery's Retry itself, as some code does, instead of ``raise self.retry()``."""
    note("run", self.request.id, self.request.retries)
    raise Retry("asked by hand", when=0)


@app.task(bind=True, base=Noting, max_retries=1, default_retry_delay=0)
def retries_once(self: Any) -> str:
    """``raise self.retry()`` on its first run, then succeeds: still retried."""
    note("run", self.request.id, self.request.retries)
    if self.request.retries == 0:
        raise self.retry()
    return "retried"


@app.task
def echo(value: Any) -> Any:
    note("echo", value)
    return value


@app.task(bind=True, base=Noting, time_limit=1)
def overruns(self: Any) -> None:
    """Runs past its hard time limit of 1 s: its process is killed."""
    note("run", self.request.id)
    time.sleep(60)


@app.task
def errback(request: Any, exc: BaseException, traceback: str) -> None:
    """An errback called with the failed task's request, in the worker."""
    note("errback", request.id, type(exc).__name__)


@app.task
def ignored() -> None:
    """Ends by raising Ignore."""
    raise Ignore()


@app.task(bind=True)
def shows_reprs(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """Its request's ``argsrepr`` and ``kwargsrepr``."""
    return [self.request.argsrepr, self.request.kwargsrepr]


@app.task(bind=True)
def reports_progress(self: Any) -> str:
    """Publishes a custom state of its own."""
    self.update_state(state="PROGRESS", meta={"done": 1})
    return "reported"


@app.task(bind=True)
def shows_shadow(self: Any) -> Any:
    """The name it was sent to be shown by."""
    return self.request.shadow


class ShadowedByArgument(Task):
    """Shown as ``shadowed.<its first argument>`` (Celery's ``shadow_name`` hook)."""

    def shadow_name(self, args: Any, kwargs: Any, options: Any) -> str:
        return f"shadowed.{args[0]}"


@app.task(bind=True, base=ShadowedByArgument)
def shadowed_by_argument(self: Any, which: str) -> Any:
    return self.request.shadow


@app.task(bind=True, max_retries=1)
def retries_elsewhere(self: Any) -> Any:
    """Asks for its retry on another queue, with another priority (and a time limit, which
    pgtasks does not apply to a retry): Celery sends it there."""
    if self.request.retries == 0:
        raise self.retry(countdown=0, queue="elsewhere", priority=7, time_limit=30)
    return self.request.delivery_info["routing_key"], self.request.delivery_info["priority"]


@app.task(bind=True, base=Noting, max_retries=1)
def retries_to_a_bad_queue(self: Any) -> Any:
    """Asks for its retry on a queue no name can be."""
    note("run", self.request.id, self.request.retries)
    raise self.retry(countdown=0, queue="no such queue")


@app.task(bind=True, base=Noting, max_retries=1)
def retries_with_a_bad_priority(self: Any) -> Any:
    """Asks for its retry with a priority that is no number."""
    note("run", self.request.id, self.request.retries)
    raise self.retry(countdown=0, priority="high")
