"""Celery's ``celery.app``: re-exports the app class (``celery.app.base``), ``shared_task``
(pgtasks' registration, bridge/registration.py) and ``app_or_default`` (``celery._state``)."""

from __future__ import annotations

from pgtasks.compat.bridge.registration import shared_task
from pgtasks.compat.celery._state import app_or_default
from pgtasks.compat.celery.app.base import Celery

__all__ = ["Celery", "app_or_default", "shared_task"]
