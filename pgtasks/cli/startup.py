"""Starting before the database: ``pgtasks worker`` and ``pgtasks beat`` wait for it.

In docker-compose or Kubernetes the database often comes up after the processes that use it.
Like Celery's ``broker_connection_retry_on_startup`` (default on), a worker or beat that
cannot reach its database at start-up logs one clear line and retries with backoff until the
database answers; ``--no-wait-for-database`` (or ``broker_connection_retry_on_startup =
False`` in a Celery app's configuration) makes it exit at once instead (exit code 2). Only
an unreachable database is waited for: a bad URL, a schema this role may not migrate, or any
other error ends the command at once.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from typing import Any

from pgtasks.compat.bridge.flag_settings import flag as flag_setting
from pgtasks.engine.core import Engine
from pgtasks.engine.errors import DatabaseUnavailable
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.errors import DatabaseReadOnly
from pgtasks.sysdb.urls import redact_url

# Half a second before the first retry, doubled up to ten: a database that comes up within
# seconds is found at once, and a long outage is asked about every ten seconds or so.
STARTUP_BACKOFF = Backoff(first=0.5, cap=10.0)


def add_wait_option(parser: argparse.ArgumentParser) -> None:
    """``--no-wait-for-database`` on the command ``parser`` (``args.wait_for_database``: False
    when given, else None, for :func:`retry_on_startup` to decide)."""
    parser.add_argument(
        "--no-wait-for-database",
        dest="wait_for_database",
        action="store_const",
        const=False,
        default=None,
        help="exit at once if the database is unreachable at start-up (default: wait for it)",
    )


def retry_on_startup(app: Any, flag: bool | None) -> bool:
    """Whether to wait: the command line's flag when given, else a Celery app's
    ``broker_connection_retry_on_startup`` (default True)."""
    if flag is not None:
        return flag
    getter = getattr(getattr(app, "conf", None), "get", None)
    value = getter("broker_connection_retry_on_startup") if callable(getter) else None
    return True if value is None else flag_setting("broker_connection_retry_on_startup", value)


def wait_for_database(
    engine: Engine, log: logging.Logger, wait: bool = True, stop: threading.Event | None = None
) -> None:
    """Return once the database answers (connected and migrated). Raises DatabaseUnavailable
    at once when ``wait`` is False, or if ``stop`` is set while waiting."""
    since = time.monotonic()
    where = redact_url(engine.settings.database_url)
    attempts = 0
    while True:
        try:
            engine.worker_api.now_ms()
        except DatabaseUnavailable as exc:
            if not wait:
                raise
            attempts += 1
            delay = STARTUP_BACKOFF.delay(attempts)
            if attempts == 1:
                log.warning(
                    "the database %s %s (retrying with backoff up to %.0fs; --no-wait-for-database "
                    "to fail instead): %s",
                    where,
                    "is read-only; waiting for a writable primary"
                    if isinstance(exc, DatabaseReadOnly)
                    else "is not reachable yet; waiting for it",
                    STARTUP_BACKOFF.cap,
                    exc,
                )
            else:
                log.info(
                    "still waiting for the database %s (attempt %d, next in %.1fs)", where, attempts, delay
                )
            if stop is None:
                time.sleep(delay)
            elif stop.wait(delay):
                raise
            continue
        if attempts:
            log.warning("the database %s is reachable after %.1fs; starting", where, time.monotonic() - since)
        return
