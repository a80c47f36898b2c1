"""The database a management command works on, and the refusal to guess it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

from pgtasks.cli.loader import load_app
from pgtasks.client import Client
from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.settings import Settings
from pgtasks.management import TaskManagement
from pgtasks.sysdb.urls import DATABASE_URL_ENV, resolve_database_url

URL_HELP = "default: PGTASKS_DATABASE_URL"
SCHEMA_HELP = "the pgtasks schema (default pgtasks)"


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


def configured_engine(database_url: str | None, schema: str) -> Engine:
    """An engine on the database the flags name, for the commands that need no app."""
    return Engine(Settings(database_url=configured_url(database_url), schema=schema))


def _given_url(args: argparse.Namespace) -> str | None:
    """``--database-url``, else Celery's ``-b/--broker``: ``celery -b URL flower``, without an
    app, names its database so (celery-director's ``director celery flower`` runs it)."""
    return args.database_url or getattr(args, "broker_url", None)


def command_manager(args: argparse.Namespace) -> TaskManagement:
    """The management API a command acts through: -A's app, else a client of the database
    that ``--database-url`` (or ``-b``) and ``--schema`` name."""
    if args.app:
        return load_app(args.app)
    return Client(configured_url(_given_url(args)), schema=args.schema)


@contextmanager
def command_engine(args: argparse.Namespace) -> Iterator[Engine]:
    """The engine of a management command: -A's app's, else one on the database that
    ``--database-url`` (or ``-b``) and ``--schema`` name; closed when the command ends."""
    engine = load_app(args.app).engine if args.app else configured_engine(_given_url(args), args.schema)
    try:
        yield engine
    finally:
        engine.close()
