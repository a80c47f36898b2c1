"""The configuration bridge: a Celery app's settings (``app.conf``) as the settings of its
pgtasks engine.

``broker_url`` (or the ``CELERY_BROKER_URL`` environment variable, which wins as in Celery)
names the pgtasks database: ``postgresql://``, ``postgres://`` or ``sqlite:///``; kombu's
in-process ``memory://`` is a SQLite file of the process's own (bridge/memory_broker.py); a
message broker's URL is refused with what to set instead. Without one, ``PGTASKS_DATABASE_URL`` or the
SQLite default is used. ``task_default_queue``, ``task_serializer``, ``accept_content`` and
``result_expires`` become the engine's default queue, serializer, accepted content and result
retention (:data:`ENGINE_SETTINGS`: changing one rebuilds the engine).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
from typing import Any

from pgtasks.compat.bridge.memory_broker import is_memory_broker, memory_database
from pgtasks.compat.celery.app.utils import Settings as CelerySettings
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.settings import MAX_SECONDS, Settings
from pgtasks.sysdb.urls import DATABASE_URL_ENV, DEFAULT_DATABASE_URL, redact_url

DATABASE_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "sqlite")
# The Celery settings the engine is built from.
ENGINE_SETTINGS = frozenset(
    {"broker_url", "task_default_queue", "task_serializer", "accept_content", "result_expires"}
)
MIME_NAMES = {"application/json": "json", "application/x-python-serialize": "pickle"}  # content type: name


class BrokerNotSupported(ConfigurationError, ImproperlyConfigured):
    """The broker URL names a message broker: pgtasks needs its database instead."""


def check_broker_url(url: str) -> str:
    """``url`` if pgtasks can use it as its database; else a precise BrokerNotSupported."""
    first = url.split(";")[0].strip()
    scheme = first.split("://", 1)[0].lower() if "://" in first else ""
    if scheme not in DATABASE_SCHEMES:
        raise BrokerNotSupported(
            f"broker_url {redact_url(first)!r}: pgtasks does not use a message broker; it keeps tasks, "
            "results and schedules in PostgreSQL. Set broker_url (or the CELERY_BROKER_URL environment "
            "variable) to 'postgresql://user:password@host:5432/dbname' (or 'sqlite:///path/file.sqlite3'); "
            "result_backend can stay as it is (it is ignored)."
        )
    return first


def broker_setting(conf: CelerySettings) -> str | None:
    """The broker URL an app with settings ``conf`` names (``CELERY_BROKER_URL`` first, as in
    Celery; the first of a failover list), or None."""
    broker = os.environ.get("CELERY_BROKER_URL") or conf.get("broker_url")
    if isinstance(broker, (list, tuple)):
        broker = broker[0] if broker else None
    return str(broker) if broker else None


def database_url(conf: CelerySettings) -> str:
    """The pgtasks database of an app with settings ``conf`` (see the module docstring)."""
    broker = broker_setting(conf)
    if broker and is_memory_broker(broker):
        return memory_database()
    if broker:
        return check_broker_url(broker)
    return os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL


def expires_seconds(value: Any) -> float | None:
    """Celery's ``result_expires`` (a timedelta or seconds; None or 0: keep results) as the
    engine's retention in seconds. Past a century (``timedelta(days=365 * 200)``, which Celery
    takes) no result can be that old: kept, as with None."""
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ImproperlyConfigured(
            "result_expires must be a positive timedelta or number of seconds (None or 0: keep "
            f"results), not {value!r}"
        )
    return None if value > MAX_SECONDS else float(value)


def accept_content(value: Any) -> list[str]:
    """Celery's ``accept_content``: a list (tuple, set) of serializer names or content types;
    empty or None: ``['json']``. A lone string is refused: iterated, it would be its letters."""
    if not value:
        return ["json"]
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ImproperlyConfigured(
            f"accept_content must be a list of serializer names such as ['json'], not {value!r}"
        )
    return list(value)


def engine_settings(conf: CelerySettings, settings: Settings) -> Settings:
    """``settings`` (the engine's) with what ``conf`` says of :data:`ENGINE_SETTINGS`."""
    accept = tuple(MIME_NAMES.get(c, c) for c in accept_content(conf.accept_content))
    serializer = MIME_NAMES.get(conf.task_serializer, conf.task_serializer)
    return dataclasses.replace(
        settings,
        database_url=database_url(conf),
        default_queue=conf.task_default_queue or "celery",
        serializer=serializer,
        accept_content=accept,
        result_expires=expires_seconds(conf.result_expires),
    )


def unused_result_serializer(conf: Any) -> str | None:
    """Why ``result_serializer`` is not what stores results, when it names another serializer
    than ``task_serializer`` (a task's row has one serialization, its arguments'); else None."""
    result, task = (str(conf.get(n) or "json") for n in ("result_serializer", "task_serializer"))
    if MIME_NAMES.get(result, result) == MIME_NAMES.get(task, task):
        return None
    return (
        f"result_serializer {result!r} is not used: a task's result is stored with its arguments' "
        f"serializer, task_serializer {task!r}; set task_serializer (and accept_content) to "
        f"{result!r} for results only it can carry"
    )


def read_on_first_use(obj: Any) -> bool:
    """Django's settings object: read on first use only (reading it configures Django)."""
    return type(obj).__name__ in ("LazySettings", "Settings") and type(obj).__module__.startswith("django.")
