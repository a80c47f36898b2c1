"""``celery.contrib.testing.app`` and ``celery.contrib.testing.tasks``: the test app helpers and
the ``ping`` task Celery's test worker uses to check it is up."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pgtasks.compat import current
from pgtasks.compat.app import Celery
from pgtasks.compat.registration import shared_task
from pgtasks.compat.testing import test_app

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


def _ping() -> str:
    """Answers ``"pong"``: the task a test worker runs to show it is ready."""
    return "pong"


ping: Any = shared_task(name="celery.ping")(_ping)


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
    in-memory broker becomes a SQLite file of the app's own)."""
    settings = {**DEFAULT_TEST_CONFIG, **dict(config or {})}
    if broker is not None:
        settings["broker_url"] = broker
    app = test_app(settings, {"main": name or "celery.tests", **kwargs})
    if set_as_current:
        app.set_current()
    return app


@contextmanager
def setup_default_app(app: Celery, use_trap: bool = False) -> Iterator[None]:
    """Make ``app`` the current and default app while the block runs, then restore the
    previous one."""
    previous = current.current_or_none()
    app.set_current()
    try:
        yield
    finally:
        if previous is not None:
            previous.set_current()


__all__ = ["DEFAULT_TEST_CONFIG", "TestApp", "ping", "setup_default_app"]
