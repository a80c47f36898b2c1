"""An App opened for one test and closed after it: the body of the tests' app fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pgtasks import App


@contextmanager
def opened_app(name: str, url: str, **settings: Any) -> Iterator[App]:
    """``App(name, database_url=url, **settings)``, closed at the end."""
    app = App(name, database_url=url, **settings)
    try:
        yield app
    finally:
        app.close()
