"""Celery's ``celery`` package on pgtasks: the import rule (bridge/install.py) makes ``import
celery`` this package, and ``celery.X.Y`` the module ``compat/celery/X/Y.py``. It re-exports
Celery's top-level names from the modules that define them, as Celery's ``celery`` does.
"""

from __future__ import annotations

import importlib
import sys
import types

import pgtasks.compat.bridge.celery_version as _release
from pgtasks.compat.celery._state import current_app, current_task, get_current_app
from pgtasks.compat.celery.app import shared_task
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.app.task import Task
from pgtasks.compat.celery.app.utils import bugreport
from pgtasks.compat.celery.canvas import (
    Signature,
    chain,
    chord,
    chunks,
    group,
    maybe_signature,
    signature,
    subtask,
    xmap,
    xstarmap,
)
from pgtasks.compat.celery.local import Proxy
from pgtasks.compat.celery.utils import uuid

version_info_t = _release.version_info_t
VERSION = version_info = _release.VERSION
__version__ = _release.__version__
SERIES = _release.SERIES
VERSION_BANNER = _release.VERSION_BANNER

# Celery's old ``celery.registry`` module: ``registry.tasks`` is the current app's tasks.
registry = types.SimpleNamespace(tasks=Proxy(lambda: get_current_app().tasks))

__all__ = [
    "VERSION",
    "VERSION_BANNER",
    "Celery",
    "Signature",
    "Task",
    "bugreport",
    "chain",
    "chord",
    "chunks",
    "current_app",
    "current_task",
    "group",
    "maybe_signature",
    "shared_task",
    "signature",
    "subtask",
    "uuid",
    "version_info_t",
    "xmap",
    "xstarmap",
]


def __getattr__(name: str) -> types.ModuleType:
    """``celery.bootsteps`` read before it was imported: the module the import rule serves for
    ``celery.<name>``, when this package is the process's ``celery``."""
    if name.startswith("__") or sys.modules.get("celery") is not sys.modules[__name__]:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return importlib.import_module(f"celery.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"celery.{name}":
            raise
        raise AttributeError(f"module 'celery' has no attribute {name!r}") from None
