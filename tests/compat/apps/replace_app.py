"""Task.replace, and callbacks and errbacks on every signature type: written only against
Celery's API."""

from __future__ import annotations

import os

from celery import Celery, Task, group, signature

from tests.compat.apps.ledger import note

app = Celery("replace", broker=os.environ.get("PGTASKS_DATABASE_URL"))


class Broken(Exception):
    """The application's own failure."""


class NotingTask(Task):
    """Notes every replacement, then replaces as Celery does."""

    def on_replace(self, sig):
        note("on_replace", self.request.id, sig.name)
        return super().on_replace(sig)


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


@app.task(bind=True, base=NotingTask)
def replace_with(self, sig):
    """Replaced by ``sig``, which arrives as a plain dict (JSON): rebuilt by ``signature``."""
    return self.replace(signature(sig))


@app.task(bind=True)
def replace_by_add(self, x):
    return self.replace(add.s(x, 100))


@app.task(bind=True)
def replace_by_fail(self, x):
    return self.replace(fail.s(x))


@app.task(bind=True)
def replace_by_failing_chain(self, x):
    """Replaced by a chain whose second task fails (the third never runs)."""
    return self.replace(add.s(x, 1) | fail.s() | add.s(1))


@app.task(bind=True)
def replace_by_failing_group(self, x):
    """Replaced by a group (a chord with Celery's accumulate body) with one failing task."""
    return self.replace(group(add.s(x, 1), fail.s(x)))


@app.task(bind=True)
def replace_by_sum(self, numbers):
    """A chord body replaced by a chord of its own."""
    return self.replace(tsum.s(numbers) | add.s(1))


@app.task(ignore_result=True)
def quiet(x):
    note("quiet", x)
    return x


@app.task
def record(value, label):
    note("callback", label, value)
    return value


@app.task
def on_error(task_id):
    """An old-style errback: sent as a task with the failed task's id."""
    note("errback", task_id)


@app.task
def error_handler(request, exc, traceback):
    """A new-style errback: called in the failing worker with its request and exception."""
    note("handler", request.id, type(exc).__name__)


class Flaky(Task):
    """A class-based task registered with ``app.register_task``: retries until its nth run."""

    name = "replace.flaky"
    max_retries = 3
    default_retry_delay = 0

    def run(self, n):
        if self.request.retries < n:
            raise self.retry(exc=ValueError("not yet"))
        return self.request.retries


flaky = app.register_task(Flaky())


class AutoFlaky(Task):
    """A class-based task that retries by ``autoretry_for`` (no self.retry call)."""

    name = "replace.auto_flaky"
    autoretry_for = (ValueError,)
    retry_kwargs = {"countdown": 0}
    max_retries = 3
    retry_jitter = False

    def run(self, n):
        if self.request.retries < n:
            raise ValueError("not yet")
        return self.request.retries


auto_flaky = app.register_task(AutoFlaky)


@app.task(soft_time_limit=2, time_limit=1)
def soft_above_hard():
    return "never sent"


@app.task(bind=True, time_limit=60, soft_time_limit=45)
def limits_seen(self):
    return {"time_limit": self.request.time_limit, "soft_time_limit": self.request.soft_time_limit}
