"""The Celery apps under tests/compat/apps import ``celery``: install pgtasks' names first."""

from __future__ import annotations

import pytest

from pgtasks.compat import install
from pgtasks.compat.celery import Celery

install()


@pytest.fixture
def sqlite_app(sqlite_url: str, request: pytest.FixtureRequest) -> Celery:
    """A Celery app on a SQLite file of the test's own, closed after it."""
    application = Celery(request.node.module.__name__.rsplit(".", 1)[-1], broker=sqlite_url)
    request.addfinalizer(application.close)
    return application
