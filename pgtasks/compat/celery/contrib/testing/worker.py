"""Celery's ``celery.contrib.testing.worker``: :func:`start_worker`, a worker for the app under
test while a block runs. The worker is a real pgtasks worker on threads of the test process."""

from __future__ import annotations

import importlib
import itertools
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pgtasks.compat.bridge.worker_start import expired_signal, received_signal, report_conf
from pgtasks.compat.celery.app.amqp import queue_names
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

    def reload(
        self,
        modules: Iterable[str] | None = None,
        reload: bool = False,
        reloader: Callable[[Any], Any] | None = None,
    ) -> None:
        """Import ``modules`` (the app's task modules when None), and with ``reload`` import
        those already imported again (``reloader``, else ``importlib.reload``), as Celery's
        worker does. A task defined after the worker started needs none of it: the worker
        finds a task by its name when it claims it."""
        names = self.app.loader.task_modules if modules is None else (modules or ())
        for name in set(names):
            if name in sys.modules and reload:
                (reloader or importlib.reload)(sys.modules[name])
            else:
                importlib.import_module(name)


def _consumed(app: Celery, queues: Any, exclude: Any) -> tuple[str, ...]:
    """The queues a test worker consumes: ``queues``, else the default queue and the app's
    selected ones, without ``exclude``; none left is an error (such a worker runs nothing)."""
    for option, value in (("queues", queues), ("exclude_queues", exclude)):
        if value is not None and not isinstance(value, (str, Iterable)):
            raise TypeError(f"start_worker: {option} takes queue names ('a,b' or a list), not {value!r}")
    if queues:
        names = queue_names(queues)
    else:
        names = [app.conf.task_default_queue or "celery", *app.amqp.queues.consume_from]
    excluded = set(queue_names(exclude)) if exclude else set()
    kept = tuple(sorted({n for n in names if n not in excluded}))
    if not kept:
        given = sorted(set(names))
        raise ValueError(f"start_worker: exclude_queues={exclude!r} leaves no queue to consume of {given}")
    return kept


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
    the queues it declares (``task_queues``, or those ``app.select_queues`` chose), or
    ``queues`` when given (``'a,b'`` or a list), less ``exclude_queues``, as Celery's worker
    takes them; ``pool`` is accepted (a thread pool is used: the tests' own process cannot
    fork safely). Celery's other worker options are accepted and ignored. As Celery's, it
    makes ``app`` the current app."""
    app.finalize()
    queues = _consumed(app, kwargs.get("queues"), kwargs.get("exclude_queues"))
    app.set_current()
    name = kwargs.get("hostname") or _free_name()
    try:
        options = WorkerOptions(
            queues=queues,
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
