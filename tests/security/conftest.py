"""Apps of the bad-input tests: one per test (not per hypothesis example), on SQLite, on
PostgreSQL, or on both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pgtasks import App
from tests.support.apps import opened_app

CAP = 4096  # max_payload_bytes of these apps, small so that going over it is cheap


def _app(url: str) -> Iterator[App]:
    with opened_app("sec", url, max_payload_bytes=CAP) as app:
        app.engine.database.sysdb  # noqa: B018 - create the tables before the first snapshot
        yield app


@pytest.fixture
def sqlite_app(sqlite_url: str) -> Iterator[App]:
    yield from _app(sqlite_url)


@pytest.fixture
def pg_app(pg_url: str) -> Iterator[App]:
    yield from _app(pg_url)


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    """Runs the test once on PostgreSQL and once on SQLite."""
    yield from _app(database_url)
