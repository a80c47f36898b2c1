"""The database a management command works on, and the refusal to guess it."""

from __future__ import annotations

import os

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.urls import DATABASE_URL_ENV, resolve_database_url


def configured_url(database_url: str | None) -> str:
    """The database a management command works on: ``--database-url``, else
    ``PGTASKS_DATABASE_URL``. Never the embedded SQLite default: a forgotten URL would make
    the command create an empty ``./pgtasks.sqlite3`` and answer from it, silently wrong."""
    if not database_url and not os.environ.get(DATABASE_URL_ENV):
        raise ConfigurationError(
            "no database configured: pass --database-url, set PGTASKS_DATABASE_URL, or name the "
            "application with -A (management commands never fall back to a local SQLite file)"
        )
    return resolve_database_url(database_url)
