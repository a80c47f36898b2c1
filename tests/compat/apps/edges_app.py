"""Tasks for the edge scenarios of tests/compat/apps/edges_probe.py (an expired task's
``task_revoked``, ``retry(throw=False)``, a retried task's errback, a chord body's request),
written only against Celery's API: the same module runs on a `pgtasks worker` and, for the
reference runs, on a real Celery worker with Redis (``CELERY_REFERENCE_REDIS``). Tasks and
signal receivers note what they see in the ledger (``PGTASKS_TEST_LEDGER``) as one JSON
object a line."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from celery import Celery
from celery.exceptions import Reject
from celery.signals import task_postrun, task_retry, task_revoked

from tests.compat.apps.ledger import note

_redis = os.environ.get("CELERY_REFERENCE_REDIS")
app = Celery("edges", broker=_redis or os.environ.get("PGTASKS_DATABASE_URL"), backend=_redis)
app.conf.update(result_extended=True)


def record(kind: str, token: str, **fields: Any) -> None:
    note(kind, token, json.dumps(fields, sort_keys=True, default=repr))


def _request(request: Any) -> dict[str, Any]:
    """The fields of a request the scenarios compare."""
    names = ("id", "parent_id", "root_id", "group", "group_index", "retries")
    seen = {name: getattr(request, name, "<absent>") for name in names}
    seen["chord"] = None if getattr(request, "chord", None) is None else "<set>"
    return seen


@app.task(bind=True)
def add(self: Any, x: int, y: int, token: str = "") -> int:
    record("ran", token, **_request(self.request))
    return x + y


@task_revoked.connect
def on_revoked(sender: Any = None, request: Any = None, **kwargs: Any) -> None:
    token = (getattr(request, "kwargs", None) or {}).get("token", "")
    record(
        "revoked",
        token,
        sender=getattr(sender, "name", repr(sender)),
        request_id=getattr(request, "id", None),
        request_task=getattr(request, "task", None),
        **{k: kwargs.get(k, "<absent>") for k in ("terminated", "signum", "expired")},
    )


@task_postrun.connect
def on_postrun(task_id: str = "", state: Any = None, retval: Any = None, **kwargs: Any) -> None:
    args, named = kwargs.get("args") or (), kwargs.get("kwargs") or {}
    token = named.get("token") or (args[0] if args and isinstance(args[0], str) else "")
    if token:
        record("postrun", token, id=task_id, state=state, retval=repr(retval))


@task_retry.connect
def on_retry(sender: Any = None, request: Any = None, **kwargs: Any) -> None:
    args, named = getattr(request, "args", None) or (), getattr(request, "kwargs", None) or {}
    token = named.get("token") or (args[0] if args and isinstance(args[0], str) else "")
    record("task_retry", token, id=getattr(request, "id", None))


@app.task(bind=True, max_retries=1)
def retry_without_throw(self: Any, token: str) -> str:
    """Asks for a retry with ``throw=False`` on its first run, then returns anyway."""
    record("run", token, **_request(self.request))
    if self.request.retries == 0:
        sent = self.retry(countdown=3, throw=False)
        record("retry_returned", token, type=type(sent).__name__)
    return f"returned at retries={self.request.retries}"


@app.task(bind=True, max_retries=1)
def retry_then_fail(self: Any, token: str) -> None:
    """Retries once, then fails: its errback runs once, after the retry."""
    record("run", token, **_request(self.request))
    if self.request.retries == 0:
        raise self.retry(countdown=0)
    raise ValueError("failed after a retry")


@app.task(bind=True, acks_late=True)
def rejected_once(self: Any, token: str) -> str:
    """Rejected with requeue on its first delivery; succeeds when delivered again."""
    record("run", token, **_request(self.request))
    if not self.request.delivery_info.get("redelivered"):
        raise Reject(requeue=True)
    return "second-pass"


@app.task
def errback(request: Any, exc: BaseException, traceback: Any, token: str = "") -> None:
    """A new-style errback: the failed task's request, its exception and traceback."""
    record("errback", token, exc=type(exc).__name__, **_request(request))


@app.task(bind=True)
def body(self: Any, values: list[int] | int, token: str) -> int:
    """A chord body (or a task after one): notes its own request."""
    record("body", token, **_request(self.request))
    return values if isinstance(values, int) else sum(values)


@app.task
def blocks_until(path: str, token: str) -> None:
    """Holds its process until the file ``path`` exists (the test's go-ahead)."""
    record("started", token)
    while not os.path.exists(path):
        time.sleep(0.01)
