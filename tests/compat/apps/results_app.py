"""Results, retries, routing and revoke: written only against Celery's public API."""

from __future__ import annotations

import os
import re
import time

from celery import Celery, shared_task
from celery.exceptions import Ignore
from celery.utils.log import get_task_logger

import pgtasks
from tests.compat.apps.ledger import note

app = Celery("results", broker=os.environ.get("PGTASKS_DATABASE_URL"))
app.conf.update(
    task_routes=[
        {"tests.compat.apps.results_app.routed_by_name": {"queue": "named"}},
        # Celery's ordered form: a router given as a list of (pattern, route) pairs
        [("tests.compat.apps.results_app.glob_*", "globbed"), (re.compile(r".*\.never$"), "never")],
        lambda name, args, kwargs, options, task=None, **kw: (
            {"queue": "by_function"} if name.endswith("by_function") else None
        ),
    ],
    task_track_started=False,
)
logger = get_task_logger(__name__)


class AppError(Exception):
    """An exception type of the application's own."""


@app.task
def nap(seconds):
    """A Celery task that sleeps durably: its worker slot is free while it waits."""
    pgtasks.sleep(seconds)
    return "rested"


@app.task
def add(x, y):
    return x + y


@app.task
def block(release_path, limit=60):
    """A Celery task that holds its worker slot until the file ``release_path`` exists."""
    deadline = time.monotonic() + limit
    while not os.path.exists(release_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return "slept"


@app.task
def fail(message):
    raise AppError(message)


@app.task(bind=True)
def whoami(self, *args, **kwargs):
    r = self.request
    logger.info("whoami %s", r.id)
    return {
        "id": r.id,
        "retries": r.retries,
        "hostname": r.hostname,
        "is_eager": r.is_eager,
        "called_directly": r.called_directly,
        "args": list(r.args),
        "kwargs": r.kwargs,
        "routing_key": (r.delivery_info or {}).get("routing_key"),
    }


@app.task(bind=True, max_retries=3, default_retry_delay=0)
def flaky(self, succeed_on):
    note(self.request.id, "attempt", self.request.retries)
    if self.request.retries < succeed_on:
        raise self.retry(exc=ConnectionError(f"attempt {self.request.retries}"))
    return self.request.retries


@app.task(bind=True, max_retries=1)
def exhausts(self):
    raise self.retry(countdown=0)


@app.task(
    autoretry_for=(LookupError,),
    dont_autoretry_for=(IndexError,),
    retry_kwargs={"max_retries": 2},
    retry_backoff=False,
    default_retry_delay=0,
)
def autoretried(key):
    note("autoretried", key)
    if key == "index":
        raise IndexError(key)
    raise KeyError(key)


@app.task
def ignored():
    raise Ignore()


@app.task
def waits_on_another():
    return add.delay(1, 1).get(timeout=5)


@app.task(bind=True, max_retries=2)
def retries_quietly(self):
    self.retry(exc=ValueError("quiet"), throw=False, countdown=0)
    return "body value"


@app.task
def routed_by_name():
    return "named"


@app.task
def glob_match():
    return "globbed"


@app.task
def routed_by_function():
    return "by_function"


@app.task(queue="own")
def own_queue():
    return "own"


@shared_task
def shared_double(x):
    return 2 * x


@app.task
def record(label):
    note("ran", label)
    return label


@app.task(throws=(KeyError,))
def raises_expected(kind):
    """Fails with a KeyError (declared in ``throws``) or a ValueError (not declared)."""
    raise KeyError("declared") if kind == "declared" else ValueError("undeclared")


ORDER: list[str] = []  # the failure handlers of fails_in_order, in the order they ran


class RecordsFailure(app.Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        ORDER.append("on_failure")


@app.task(base=RecordsFailure)
def fails_in_order():
    raise ValueError("in order")


@app.task
def errback_in_order(request, exc, traceback):
    ORDER.append("errback")


@app.task(bind=True)
def stops_chain(self, value):
    """Stops the rest of its chain, Celery's way: ``self.request.chain = None``."""
    note("chain-seen", ",".join(s["task"].rsplit(".", 1)[-1] for s in self.request.chain or []))
    self.request.chain = None
    return value


@app.task(bind=True)
def reads_chain(self, value):
    """Notes the rest of its chain: each step's task name and id, the next one last."""
    steps = [
        f"{s['task'].rsplit('.', 1)[-1]}={s['options'].get('task_id')}" for s in self.request.chain or []
    ]
    note("chain-read", ",".join(steps) or "-")
    return value


@app.task(bind=True)
def stops_callbacks(self, value):
    """Stops its link= callbacks: ``self.request.callbacks = None``."""
    note("callbacks-seen", ",".join(s["task"].rsplit(".", 1)[-1] for s in self.request.callbacks or []))
    self.request.callbacks = None
    return value


@app.task
def non_finite():
    """What numeric code returns: NaN and infinities, which Celery's JSON carries."""
    return {"mean": float("nan"), "bounds": [float("-inf"), float("inf")]}


@app.task
def noted_errback(request, exc, traceback):
    note("errback", request.id)


@app.task(bind=True, max_retries=1, default_retry_delay=0)
def stops_chain_then_retries(self, value):
    """Clears its chain, then asks to be retried once: Celery resends it without its chain."""
    self.request.chain = None
    if self.request.retries == 0:
        raise self.retry()
    return value


@app.task(bind=True)
def forwards_chain(self, value):
    """Celery's forwarding idiom: another task carries the rest of the chain, this one drops it."""
    record.apply_async(("forwarded",), chain=self.request.chain)
    self.request.chain = None
    return value


class TwoPartError(Exception):
    """Keeps only ``code`` in its args, so ``TwoPartError(*args)`` refuses to rebuild it."""

    def __init__(self, code, detail):
        super().__init__(code)
        self.detail = detail


@app.task
def fails_unrebuildable(code):
    raise TwoPartError(code, "detail")


@app.task(bind=True, default_retry_delay=30, max_retries=1)
def retries_unrebuildable(self, code):
    raise self.retry(exc=TwoPartError(code, "detail"))
