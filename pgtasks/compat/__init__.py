"""Celery's public API on pgtasks: run a Celery application on PostgreSQL alone.

The layer is shaped like Celery: ``celery.X.Y`` is ``compat/celery/X/Y.py`` (``kombu.*`` and
``billiard.*`` likewise, under ``compat/kombu/`` and ``compat/billiard/``), and what Celery's API
means on pgtasks is ``compat/bridge/``. ``pgtasks.compat.install()`` (the ``pgtasks`` command
calls it before importing ``-A``; the import hook of ``pgtasks_celery.pth`` on the first
``import celery``) makes that rule this process's. See docs/celery-migration.md for what is
supported and how pgtasks differs. This package only re-exports.
"""

from __future__ import annotations

from pgtasks.compat.bridge.install import install, installed, uninstall
from pgtasks.compat.celery._state import get_current_app as current_app
from pgtasks.compat.celery.app import shared_task
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.app.task import Task
from pgtasks.compat.celery.canvas.signature import Signature, signature
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.result.eager_result import EagerResult

__all__ = [
    "AsyncResult",
    "Celery",
    "EagerResult",
    "Signature",
    "Task",
    "current_app",
    "install",
    "installed",
    "shared_task",
    "signature",
    "uninstall",
]
