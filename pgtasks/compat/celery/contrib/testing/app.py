"""Celery's ``celery.contrib.testing.app``: ``TestApp``, ``Trap`` and ``setup_default_app``, and
:func:`test_app`, the app behind them and the pytest plugin's fixtures. Celery's in-memory
broker (``memory://``, the test configuration's default) becomes a SQLite file of the test
process's own, so tests run against a real database with nothing to start."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pgtasks.compat.celery import _state
from pgtasks.compat.celery.app.base import Celery

__all__ = ["DEFAULT_TEST_CONFIG", "TestApp", "Trap", "setup_default_app", "test_app"]

IN_MEMORY = ("memory://", "cache+memory://", "rpc://", "")

DEFAULT_TEST_CONFIG: dict[str, Any] = {
    "worker_hijack_root_logger": False,
    "worker_log_color": False,
    "accept_content": {"json"},
    "enable_utc": True,
    "timezone": "UTC",
    "broker_url": "memory://",
    "result_backend": "cache+memory://",
    "broker_heartbeat": 0,
}


def _test_database(config: Mapping[str, Any]) -> str | None:
    """The SQLite file standing for Celery's in-memory broker; None to keep the URL."""
    broker = str(config.get("broker_url") or "")
    if broker.split("://")[0] + "://" in IN_MEMORY or broker in IN_MEMORY:
        return _memory_database(os.getpid())
    return None


@functools.cache
def _memory_database(pid: int) -> str:
    """One SQLite file per process, removed when the process exits: kombu's memory transport
    keeps one set of queues per process, so every app of a test process (a test's
    ``celery_app``, the ``celery_session_worker``'s app) sends to and reads from the same
    tasks, as on Celery. ``pid`` keys it: a forked process makes a file of its own."""
    folder = tempfile.mkdtemp(prefix="pgtasks-celery-test-")
    atexit.register(_remove, folder, pid)
    return f"sqlite:///{os.path.join(folder, 'tasks.sqlite3')}"


def _remove(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # not from a forked child that inherited the handler
        shutil.rmtree(folder, ignore_errors=True)


def test_app(
    config: Mapping[str, Any] | None = None, parameters: Mapping[str, Any] | None = None, includes: Any = ()
) -> Celery:
    """A Celery app for a test, as Celery's ``TestApp``: ``config`` as its settings (a memory
    broker becomes the process's SQLite file), ``parameters`` to the constructor."""
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


def TestApp(
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    enable_logging: bool = False,
    set_as_current: bool = False,
    log: Any = None,
    backend: Any = None,
    broker: Any = None,
    **kwargs: Any,
) -> Celery:
    """A Celery app for tests with :data:`DEFAULT_TEST_CONFIG` and ``config`` (Celery's
    in-memory broker becomes the test process's SQLite file)."""
    settings = {**DEFAULT_TEST_CONFIG, **dict(config or {})}
    if broker is not None:
        settings["broker_url"] = broker
    app = test_app(settings, {"main": name or "celery.tests", **kwargs})
    if set_as_current:
        app.set_current()
    return app


class Trap:
    """An app that fails every use: a test suite sets it as the default app
    (``celery._state.set_default_app(Trap())``) so that code reaching for ``current_app``
    where no app is current fails instead of using an app no test configured."""

    def __getattr__(self, name: str) -> Any:
        if name in ("_is_coroutine", "__func__"):  # unittest.mock looks these up to patch it
            return None
        raise RuntimeError(f"Test depends on current_app (it read {name!r} of the default app, a Trap)")


@contextmanager
def setup_default_app(app: Celery, use_trap: bool = False) -> Iterator[None]:
    """Make ``app`` the current and default app while the block runs, then restore the
    previous one."""
    previous = _state.current_app_or_none()
    app.set_current()
    try:
        yield
    finally:
        if previous is not None:
            previous.set_current()
