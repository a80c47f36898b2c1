"""Celery's ``celery.contrib.testing.worker``: :func:`start_worker`, a worker for the app under
test while a block runs. The worker is a real pgtasks worker on threads of the test process."""

from __future__ import annotations

import itertools
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pgtasks.compat.bridge.worker_start import expired_signal, received_signal, report_conf
from pgtasks.compat.celery.app.amqp import declared_queues
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.utils.nodenames import anon_nodename
from pgtasks.compat.celery.worker.control import commands_of
from pgtasks.compat.celery.worker.worker import WorkController
from pgtasks.worker import Worker, WorkerOptions

__all__ = ["TestWorkController", "start_worker"]

_running: set[str] = set()  # the names of this process's test workers now running
_lock = threading.Lock()


def _free_name() -> str:
    """Celery's name for a test worker, ``gen<pid>@<host>`` (``anon_nodename()``); a second
    one running at the same time in this process gets ``gen<pid>-2@<host>``: two workers
    of one name would take each other's tasks back as their own."""
    with _lock:
        for n in itertools.count(1):
            name = anon_nodename() if n == 1 else anon_nodename(prefix=f"gen-{n}-")
            if name not in _running:
                _running.add(name)
                return name
    raise AssertionError("unreachable")


class TestWorkController(WorkController):
    """What ``start_worker`` yields: the running pgtasks worker of the app."""

    def __init__(self, app: Celery, worker: Worker) -> None:
        super().__init__(app, worker.executor_id)
        self.worker = worker

    def __repr__(self) -> str:
        return f"<TestWorkController {self.hostname} of {self.app!r}>"


@contextmanager
def start_worker(
    app: Celery,
    concurrency: int = 1,
    pool: str = "solo",
    loglevel: Any = "WARNING",
    logfile: Any = None,
    perform_ping_check: bool = True,
    ping_task_timeout: float = 10.0,
    shutdown_timeout: float = 10.0,
    **kwargs: Any,
) -> Iterator[TestWorkController]:
    """Run a worker for ``app`` on threads of this process while the block runs (Celery's
    ``celery.contrib.testing.worker.start_worker``). It consumes the app's default queue and
    its ``task_queues``; ``pool`` is accepted (a thread pool is used: the tests' own process
    cannot fork safely). As Celery's, it makes ``app`` the current app."""
    app.finalize()
    app.set_current()
    name = kwargs.get("hostname") or _free_name()
    try:
        queues = {app.conf.task_default_queue or "celery"}
        queues |= {getattr(q, "name", q) for q in declared_queues(app.conf.task_queues)}
        options = WorkerOptions(
            queues=tuple(sorted(queues)),
            concurrency=max(1, int(concurrency)),
            executor_id=name,
            pool="threads",
            outcome_logger="celery.app.trace",
            received_logger="celery.worker.strategy",
            report_conf=report_conf(app),
            on_received=received_signal(app, types.SimpleNamespace(app=app, hostname=name), name),
            on_expired=expired_signal(app, name),
            custom_commands=commands_of(app),
        )
        worker = Worker(app.engine, options)
        worker.start()
        thread = threading.Thread(target=worker.run, name="pgtasks-test-worker", daemon=True)
        thread.start()
        try:
            yield TestWorkController(app, worker)
        finally:
            worker.shutdown(grace=shutdown_timeout)
            thread.join(shutdown_timeout)
    finally:
        with _lock:
            _running.discard(name)
