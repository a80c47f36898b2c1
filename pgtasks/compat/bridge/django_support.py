"""Django integration, active only when ``DJANGO_SETTINGS_MODULE`` is set and Django is
importable: ``django.setup()`` before task modules load, database connections closed around
each task and in forked children, and ``delay_on_commit``. Django itself is never required."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger("pgtasks.compat")


def django_configured() -> bool:
    return bool(os.environ.get("DJANGO_SETTINGS_MODULE"))


def setup_django() -> bool:
    """Call ``django.setup()`` when DJANGO_SETTINGS_MODULE is set; True if Django is set up.
    Without Django installed, say so at debug level and carry on (a plain settings module)."""
    if not django_configured():
        return False
    try:
        django = importlib.import_module("django")
    except ImportError:
        log.debug("DJANGO_SETTINGS_MODULE is set but Django is not installed: skipping django.setup()")
        return False
    django.setup()
    return True


def _db() -> Any:
    """``django.db`` if the application has loaded it (never imported here)."""
    return sys.modules.get("django.db")


def close_old_connections() -> None:
    """Before and after each task: drop connections that are unusable or past CONN_MAX_AGE."""
    db = _db()
    if db is None:
        return
    try:
        db.close_old_connections()
    except Exception:
        log.exception("closing old Django database connections failed")


def close_connections_after_fork() -> None:
    """In a forked worker child: never share the parent's database sockets."""
    db = _db()
    if db is None:
        return
    for conn in db.connections.all():
        try:
            conn.close()
        except Exception:
            log.debug("closing inherited Django connection %r failed", conn, exc_info=True)


def on_commit(callback: Callable[[], Any]) -> bool:
    """Run ``callback`` when the current Django transaction commits; False without Django."""
    db = _db()
    if db is None:
        return False
    db.transaction.on_commit(callback)
    return True


def installed_apps() -> list[str]:
    """Django's INSTALLED_APPS (for autodiscover_tasks without packages), or []."""
    conf = sys.modules.get("django.conf")
    if conf is None:
        return []
    try:
        return list(conf.settings.INSTALLED_APPS)
    except Exception:
        return []
