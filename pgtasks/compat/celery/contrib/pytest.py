"""Celery's pytest plugin, ``celery.contrib.pytest``: enable it as Celery's docs say
(``pytest_plugins = ("celery.contrib.pytest",)`` in a conftest, or ``-p
celery.contrib.pytest``). The fixtures give a Celery app on a SQLite file of the test's own
(unless ``celery_config`` names a database) and a real pgtasks worker on threads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from pgtasks.compat.celery import _state
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.contrib.testing.app import DEFAULT_TEST_CONFIG, Trap, test_app
from pgtasks.compat.celery.contrib.testing.worker import TestWorkController, start_worker

__all__ = [
    "celery_app",
    "celery_class_tasks",
    "celery_config",
    "celery_enable_logging",
    "celery_includes",
    "celery_parameters",
    "celery_session_app",
    "celery_session_worker",
    "celery_worker",
    "celery_worker_parameters",
    "celery_worker_pool",
    "depends_on_current_app",
    "use_celery_app_trap",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "celery(**overrides): override celery configuration for a test case")


@contextmanager
def _current(app: Celery, use_trap: bool, make_current: bool) -> Iterator[Celery]:
    """Celery's ``setup_default_app`` around a test app: inside the block ``app`` is the
    current app if ``make_current`` (the session app), a :class:`Trap` with ``use_trap`` (any
    use of ``current_app`` fails); after it, the app current before is again."""
    previous = _state.current_app_or_none()
    if use_trap:
        _state.set_current_app(Trap())  # type: ignore[arg-type]
    elif make_current:
        app.set_current()
    try:
        yield app
    finally:
        _state.set_current_app(previous)
        app.close()


def _app(config: Mapping[str, Any], parameters: Mapping[str, Any]) -> Celery:
    """A test app as Celery's plugin makes one (a ``TestApp``): Celery's test settings
    (``DEFAULT_TEST_CONFIG``) under ``celery_config``'s."""
    return test_app({**DEFAULT_TEST_CONFIG, **dict(config)}, parameters)


def _import_includes(app: Celery, includes: Any) -> None:
    """Import the ``celery_includes`` modules, as Celery's worker fixtures do before they start."""
    for module in includes or ():
        app.loader.import_task_module(module)


@pytest.fixture(scope="session")
def celery_config() -> Mapping[str, Any]:
    """Override to configure the test app (a dict of settings)."""
    return {}


@pytest.fixture(scope="session")
def celery_parameters() -> Mapping[str, Any]:
    """Override for the keyword arguments of the test app's constructor."""
    return {}


@pytest.fixture(scope="session")
def celery_includes() -> Any:
    """Override with the task modules the worker fixtures import."""
    return ()


@pytest.fixture(scope="session")
def celery_class_tasks() -> Any:
    """Override with the class-based tasks (Task subclasses) the session worker's app
    registers before it starts."""
    return []


@pytest.fixture(scope="session")
def celery_worker_pool() -> str:
    return "solo"


@pytest.fixture(scope="session")
def celery_worker_parameters() -> Mapping[str, Any]:
    """Override for the keyword arguments of ``start_worker``."""
    return {}


@pytest.fixture(scope="session")
def celery_enable_logging() -> bool:
    return False


@pytest.fixture(scope="session")
def use_celery_app_trap() -> bool:
    return False


@pytest.fixture(scope="session")
def celery_session_app(
    celery_config: Mapping[str, Any],
    celery_parameters: Mapping[str, Any],
    celery_enable_logging: bool,
    use_celery_app_trap: bool,
) -> Iterator[Celery]:
    """One test app for the whole session."""
    with _current(_app(celery_config, celery_parameters), use_celery_app_trap, True) as app:
        yield app


@pytest.fixture(scope="session")
def celery_session_worker(
    celery_session_app: Celery,
    celery_includes: Any,
    celery_class_tasks: Any,
    celery_worker_pool: str,
    celery_worker_parameters: Mapping[str, Any],
) -> Iterator[TestWorkController]:
    """A worker of the session app, for the whole session, with ``celery_includes`` imported
    and ``celery_class_tasks`` registered first."""
    _import_includes(celery_session_app, celery_includes)
    for task in celery_class_tasks:
        celery_session_app.register_task(task)
    with start_worker(
        celery_session_app, pool=celery_worker_pool, **dict(celery_worker_parameters)
    ) as worker:
        yield worker


@pytest.fixture
def celery_app(
    request: pytest.FixtureRequest,
    celery_config: Mapping[str, Any],
    celery_parameters: Mapping[str, Any],
    celery_enable_logging: bool,
    use_celery_app_trap: bool,
) -> Iterator[Celery]:
    """A fresh test app for this test; ``@pytest.mark.celery(...)`` overrides settings. As
    Celery's, it is not the current app (``current_app`` stays the project's) until a worker
    starts for it or the test asks for ``depends_on_current_app``; and it takes the fixtures
    Celery's takes, so that a conftest importing those by name (as django-celery-beat's and
    django-celery-results' do) has all it needs."""
    mark = request.node.get_closest_marker("celery")
    config = {**dict(celery_config), **(mark.kwargs if mark is not None else {})}
    with _current(_app(config, celery_parameters), use_celery_app_trap, False) as app:
        yield app


@pytest.fixture
def celery_worker(
    celery_app: Celery,
    celery_includes: Any,
    celery_worker_pool: str,
    celery_worker_parameters: Mapping[str, Any],
) -> Iterator[TestWorkController]:
    """A worker of ``celery_app`` for this test, with ``celery_includes`` imported first."""
    _import_includes(celery_app, celery_includes)
    with start_worker(celery_app, pool=celery_worker_pool, **dict(celery_worker_parameters)) as worker:
        yield worker


@pytest.fixture
def depends_on_current_app(celery_app: Celery) -> None:
    """The test app is the current app (for code that uses ``current_app``)."""
    celery_app.set_current()
