"""Celery's public API on pgtasks: run a Celery application on PostgreSQL alone.

``pgtasks.compat.install()`` (the ``pgtasks`` command calls it before importing ``-A``)
makes ``import celery`` and the ``kombu`` names applications use resolve to this package.
See docs/celery-migration.md for what is supported and how pgtasks differs.
"""

from __future__ import annotations

from pgtasks.compat.app import Celery, current_app
from pgtasks.compat.canvas import Signature, signature
from pgtasks.compat.install import install, installed, uninstall
from pgtasks.compat.registration import shared_task
from pgtasks.compat.result import AsyncResult, EagerResult
from pgtasks.compat.task import Task

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
