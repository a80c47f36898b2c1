"""Tasks for the canvas error-path scenarios (tests/compat/apps/canvas_scenarios.py), written
only against Celery's API: the same module runs on a `pgtasks worker` and, for the reference
runs, on a real Celery worker with Redis (``CELERY_REFERENCE_REDIS`` names it; pgtasks ignores
``backend``). Tasks note their effects in the ledger (``PGTASKS_TEST_LEDGER``)."""

from __future__ import annotations

import json
import os
import time

from celery import Celery, chain, group
from celery.exceptions import Reject

from tests.compat.apps.ledger import note

_redis = os.environ.get("CELERY_REFERENCE_REDIS")
app = Celery("canvas_errors", broker=_redis or os.environ.get("PGTASKS_DATABASE_URL"), backend=_redis)
app.conf.update(result_extended=True)


class Expected(Exception):
    """The failure the scenarios provoke."""


@app.task
def identity(x):
    return x


@app.task
def add(x, y, z=None):
    return x + y + (z or 0)


@app.task
def tsum(numbers):
    return sum(numbers)


@app.task
def fail(*args):
    raise Expected(f"failed with {list(args)}")


@app.task
def record(value, token):
    """A chord body or callback: notes that it ran, and with what."""
    note("ran", token, json.dumps(value, sort_keys=True))
    return value


@app.task
def mark(token):
    """One positional argument: as an errback, Celery sends it as a task (with the failed
    task's id first, unless immutable)."""
    note("mark", token)


@app.task
def mark_here(token, where="worker"):
    """Two positional arguments: as an errback, Celery calls it in the failing worker with
    ``(request, exc, traceback)`` first (unless immutable)."""
    note("mark", token)


@app.task
def errback_with_id(task_id, *, token):
    """Celery's errback that takes the failed task's id (one positional argument)."""
    note("id", token, task_id)


@app.task
def errback_with_request(request, exc, traceback, *, token):
    """Celery's errback that takes ``(request, exc, traceback)``."""
    note("request", token, request.id, type(exc).__name__)


@app.task(bind=True)
def errback_bound(self, task_id, exc=None, traceback=None, *, token):
    """A bound errback: Celery's documentation says it is sent as a task with the failed id.
    Notes that id, then its own parent and root ids."""
    note("bound", token, task_id, self.request.parent_id, self.request.root_id)


@app.task(bind=True)
def ids(self, label):
    """What the worker told this task about its place in the workflow."""
    r = self.request
    return {"label": label, "id": r.id, "parent_id": r.parent_id, "root_id": r.root_id}


@app.task(bind=True)
def group_place(self, label):
    """The group this task gives a result to, its position there, and whether it is a chord's
    header task (``request.chord``: the body)."""
    r = self.request
    chord = (r.chord or {}).get("options", {}).get("task_id") or bool(r.chord)  # the body's id
    return {"label": label, "group": r.group, "group_index": r.group_index, "chord": chord}


@app.task(bind=True, max_retries=1)
def stamps_seen(self, *previous, retry=False):
    """The stamps the worker gave this task (after one retry, with ``retry``)."""
    if retry and not self.request.retries:
        raise self.retry(countdown=0)
    r = self.request
    stamped = sorted(r.stamped_headers or [])
    return {
        "stamps": r.stamps,
        "stamped_headers": stamped,
        "as_attributes": {h: getattr(r, h) for h in stamped},
    }


@app.task(bind=True)
def replaced_by_stamps_seen(self):
    """Replaces itself by a task stamped ``replaced``."""
    sig = stamps_seen.si()
    sig.stamp(replaced="yes")
    return self.replace(sig)


@app.task(bind=True)
def collect_ids(self, previous, label):
    r = self.request
    return {"label": label, "id": r.id, "parent_id": r.parent_id, "root_id": r.root_id, "previous": previous}


@app.task(bind=True)
def replaced_by_failing_chain(self, token):
    """Replaced by a chain that fails and carries an errback of its own."""
    flow = chain(identity.si(1), fail.s())
    flow.link_error(mark.si(f"{token}-inner"))
    return self.replace(flow)


@app.task(bind=True)
def replaced_by_failing_task(self):
    return self.replace(fail.si("replaced"))


@app.task(bind=True)
def add_to_my_chord(self, numbers, value):
    """A chord header task that adds one task per number to its own chord."""
    for number in numbers:
        self.add_to_chord(add.s(number, value))
    return 0


@app.task(bind=True)
def add_chord_to_my_chord(self, numbers, value):
    """A chord header task that adds a chord (a group and its sum) to its own chord."""
    self.add_to_chord(group(add.s(number, value) for number in numbers) | tsum.s())
    return 0


@app.task(bind=True, acks_late=True)
def reject_once(self):
    """Rejected with requeue on its first delivery; succeeds when delivered again."""
    if not self.request.delivery_info.get("redelivered"):
        raise Reject(requeue=True)
    return "second-pass"


@app.task
def sleeping(seconds):
    time.sleep(seconds)
    return seconds


@app.task(ignore_result=True)
def quiet(token):
    note("quiet", token)
    return token


@app.task
def loud(token):
    note("loud", token)
    return token


@app.task
def member_ids(group_tuple):
    """A GroupResult passed as an argument (its ``as_tuple()`` form): the ids of its members."""
    from celery.result import result_from_tuple

    restored = result_from_tuple(group_tuple, app=app)
    return [r.id for r in restored.results]


@app.task
def chain_with_a_group():
    """Starts a chain whose middle is a group and returns its result (stored as its tuple)."""
    from celery import group

    return (add.s(1, 1) | group(add.s(1), add.s(2)) | tsum.s()).delay()
