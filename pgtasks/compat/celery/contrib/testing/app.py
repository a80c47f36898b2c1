"""Celery's ``celery.contrib.testing.app``: ``TestApp``, ``Trap`` and ``setup_default_app``, and
:func:`test_app`, the app behind them and the pytest plugin's fixtures. Celery's in-memory
broker (``memory://``, the test configuration's default), or a message broker's URL, becomes a
SQLite file of the test process's own, so tests run against a real database with nothing to
start; a database URL is kept."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pgtasks.compat.bridge.configuration import DATABASE_SCHEMES
from pgtasks.compat.bridge.memory_broker import memory_database
from pgtasks.compat.celery import _state
from pgtasks.compat.celery.app.base import Celery

__all__ = ["DEFAULT_TEST_CONFIG", "TestApp", "Trap", "setup_default_app", "test_app"]

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
    """The SQLite file of the test process standing for the test app's broker, unless
    ``broker_url`` names a database (then None: the URL is kept). Celery's in-memory broker,
    and the message broker a project's CI runs for Celery (the Testing guide's ``celery_config``
    names ``amqp://`` or ``redis://``), are where the test's tasks go, which here is a database."""
    broker = config.get("broker_url") or ""
    if isinstance(broker, (list, tuple)):  # a failover list: its first URL, as the app reads it
        broker = broker[0] if broker else ""
    scheme = str(broker).split("://", 1)[0].lower() if "://" in str(broker) else ""
    return None if scheme in DATABASE_SCHEMES else memory_database()


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
