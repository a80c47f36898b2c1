"""Celery's test helpers: ``celery.contrib.testing.worker.start_worker`` and the pytest plugin
``celery.contrib.pytest`` (``pytest_plugins = ("celery.contrib.pytest",)``): the fixtures
``celery_app``, ``celery_worker``, ``celery_config``, ``celery_parameters``,
``celery_includes``, ``celery_worker_pool``, ``celery_worker_parameters``,
``celery_enable_logging``, ``use_celery_app_trap``, the session-scoped ``celery_session_app``
and ``celery_session_worker``, and the ``celery(**settings)`` marker.

The worker is a real pgtasks worker on threads of the test process. Celery's in-memory
broker (``memory://``, the fixtures' default) becomes a SQLite file of the test's own, so the
tests run against a real database with nothing to start."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pgtasks.compat.app import Celery
from pgtasks.worker import Worker, WorkerOptions

__all__ = ["TestWorkController", "start_worker", "test_app"]

IN_MEMORY = ("memory://", "cache+memory://", "rpc://", "")


class TestWorkController:
    """What ``start_worker`` yields: the running pgtasks worker of the app."""

    def __init__(self, app: Celery, worker: Worker) -> None:
        self.app = app
        self.worker = worker
        self.hostname = worker.executor_id

    def __repr__(self) -> str:
        return f"<TestWorkController {self.hostname} of {self.app!r}>"


def _test_database(config: Mapping[str, Any]) -> str | None:
    """A SQLite file of the test's own for Celery's in-memory broker; None to keep the URL."""
    broker = str(config.get("broker_url") or "")
    if broker.split("://")[0] + "://" in IN_MEMORY or broker in IN_MEMORY:
        folder = tempfile.mkdtemp(prefix="pgtasks-celery-test-")
        return f"sqlite:///{os.path.join(folder, 'tasks.sqlite3')}"
    return None


def test_app(
    config: Mapping[str, Any] | None = None, parameters: Mapping[str, Any] | None = None, includes: Any = ()
) -> Celery:
    """A Celery app for a test, as Celery's ``TestApp``: ``config`` as its settings (a memory
    broker becomes a SQLite file of its own), ``parameters`` to the constructor."""
    settings = {"broker_url": "memory://", "task_default_queue": "celery", **dict(config or {})}
    database = _test_database(settings)
    if database is not None:
        settings["broker_url"] = database
    params = dict(parameters or {})
    app = Celery(params.pop("main", "celery.tests"), set_as_current=False, **params)
    app.conf.update(settings)
    for module in includes or ():
        __import__(module)
    return app


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
    cannot fork safely)."""
    app.finalize()
    queues = {app.conf.task_default_queue or "celery"}
    queues |= {getattr(q, "name", q) for q in (app.conf.task_queues or ())}
    options = WorkerOptions(
        queues=tuple(sorted(queues)),
        concurrency=max(1, int(concurrency)),
        executor_id=kwargs.get("hostname") or f"gen{os.getpid()}@{threading.get_ident()}",
        pool="threads",
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
