"""Celery's ``celery.app``: re-exports the app class (``celery.app.base``), ``shared_task``
(pgtasks' registration, bridge/registration.py), ``app_or_default`` and ``default_app`` (the
current app, made when none was: ``celery._state``)."""

from __future__ import annotations

from pgtasks.compat.bridge.registration import shared_task
from pgtasks.compat.celery._state import app_or_default, get_current_app
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.local import Proxy

__all__ = ["Celery", "app_or_default", "default_app", "shared_task"]

default_app = Proxy(get_current_app)
