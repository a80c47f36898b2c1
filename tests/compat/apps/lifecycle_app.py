"""The worker's life-cycle signals (start, pool processes, stop, restart), written only against
Celery's public API; each receiver notes its process id in the ledger."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from celery import Celery
from celery.signals import (
    celeryd_init,
    heartbeat_sent,
    task_failure,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from celery.utils.log import get_task_logger

from tests.compat.apps import ledger

logger = get_task_logger(__name__)


def note(*fields: object) -> None:
    """Only in the processes of this app's worker (PGTASKS_LIFECYCLE): the tests' own process
    imports this module too, and runs other apps' workers on its threads."""
    if os.environ.get("PGTASKS_LIFECYCLE"):
        ledger.note(*fields)


app = Celery("lifecycle", broker=os.environ.get("PGTASKS_DATABASE_URL"))


# Celery's docs: "configure workers by node name" from celeryd_init, before the worker reads them
@celeryd_init.connect(sender=f"configured@{socket.gethostname()}")
def configure_this_node(sender=None, conf=None, options=None, **kwargs):
    conf.worker_concurrency = 3
    conf.task_soft_time_limit = 1
    # Celery's shapes: the -Q queues as a list, the level as a number
    note("signal celeryd_init", sender, os.getpid(), options["queues"], options["loglevel"])


@worker_ready.connect
def on_ready(sender=None, **kwargs):
    note("signal worker_ready", os.getpid())


@heartbeat_sent.connect
def on_heartbeat(sender=None, **kwargs):
    # the liveness probe of Celery deployments: a file touched at every heartbeat
    if os.environ.get("PGTASKS_LIFECYCLE"):
        Path(os.environ["PGTASKS_TEST_LEDGER"] + ".alive").touch()
    note("signal heartbeat_sent", os.getpid(), sender.hostname)


@worker_process_init.connect
def on_process_init(sender=None, **kwargs):
    note("signal worker_process_init", os.getpid())


@worker_process_shutdown.connect
def on_process_shutdown(sender=None, pid=None, exitcode=None, **kwargs):
    note("signal worker_process_shutdown", os.getpid(), pid, exitcode)


@worker_shutting_down.connect
def on_shutting_down(sender=None, sig=None, how=None, exitcode=None, **kwargs):
    note("signal worker_shutting_down", sender, sig, how, exitcode)


@worker_shutdown.connect
def on_shutdown(sender=None, **kwargs):
    note("signal worker_shutdown", os.getpid())


@task_failure.connect
def on_failure(sender=None, task_id=None, exception=None, **kwargs):
    note("signal task_failure", os.getpid(), sender.name, task_id, type(exception).__name__)


@app.task
def errback(request, exc, traceback):
    """Called ``(request, exc, traceback)`` in the worker that saw the task fail."""
    note("errback", os.getpid(), request.id, type(exc).__name__)


@app.task
def hold(release: str, seconds: float = 60) -> str:
    """Run until the file ``release`` exists (at most ``seconds``)."""
    note("task hold started", os.getpid())
    deadline = time.monotonic() + seconds
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released"


@app.task
def pid() -> int:
    return os.getpid()


@app.task
def logs(message: str) -> None:
    logger.warning("task says %s", message)
