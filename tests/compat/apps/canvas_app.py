"""Canvas workflows (chain, group, chord, callbacks, map): written only against Celery's API."""

from __future__ import annotations

import os

from celery import Celery

from tests.compat.apps.ledger import note

app = Celery("canvas", broker=os.environ.get("PGTASKS_DATABASE_URL"))


class Broken(Exception):
    """The application's own failure."""


@app.task
def add(x, y):
    return x + y


@app.task
def mul(x, y):
    return x * y


@app.task
def tsum(numbers):
    return sum(numbers)


@app.task
def fail(*args):
    raise Broken(f"failed with {list(args)}")


@app.task
def on_error(task_id):
    """An old-style errback: sent as a task with the failed task's id."""
    note("errback", task_id)
    return task_id


@app.task
def error_handler(request, exc, traceback):
    """A new-style errback: called in the failing worker with its request and exception."""
    # Celery passes the formatted traceback (its Calling guide writes it to a file)
    text = isinstance(traceback, str) and traceback.startswith("Traceback")
    note("handler", request.id, type(exc).__name__, "tb" if text else type(traceback).__name__)


@app.task
def record(value, label):
    note("callback", label, value)
    return value


@app.task(bind=True)
def whoami(self, *args):
    seen = {"root_id": self.request.root_id, "headers": self.request.headers, "args": list(args)}
    if self.request.headers:  # Celery: each custom header is an attribute of the request too
        seen["tenant"] = getattr(self.request, "tenant", None)
    extra = {k: v for k, v in (self.request.properties or {}).items() if k.startswith("x_")}
    return {**seen, **({"properties": extra} if extra else {})}


@app.task(bind=True)
def progress(self, release_path):
    """Publishes PROGRESS, then waits (with a deadline) until the test creates release_path."""
    import time
    from pathlib import Path

    self.update_state(state="PROGRESS", meta={"done": 1, "of": 2})
    deadline = time.monotonic() + 60
    while not Path(release_path).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return "released"


@app.task(soft_time_limit=1)
def soft_limited():
    """Works until its own soft limit interrupts it."""
    import time

    from celery.exceptions import SoftTimeLimitExceeded

    try:
        while True:
            time.sleep(0.01)
    except SoftTimeLimitExceeded:
        return "soft limit reached"


@app.task
def sleepy(seconds):
    import time

    time.sleep(seconds)
    return seconds


@app.task(bind=True, max_retries=2, default_retry_delay=0)
def countdown_to(self, n, seen=()):
    """Retries with new arguments until n reaches 0; returns the values it saw."""
    seen = [*seen, n]
    if n > 0:
        raise self.retry(args=(n - 1,), kwargs={"seen": seen})
    return seen


@app.task
def record_int(i):
    """Notes that it ran, returns its number (a chord header sent from a generator)."""
    note("noted", i)
    return i


@app.task(bind=True)
def origin_seen(self, send_child=False):
    """The request's origin and this process's pid (and, asked, the id of a child sent here)."""
    import os

    child = origin_seen.delay().id if send_child else None
    return {"origin": self.request.origin, "pid": os.getpid(), "child": child}
