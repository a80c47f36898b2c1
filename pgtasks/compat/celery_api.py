"""The ``celery`` module as pgtasks provides it (``pgtasks.compat.install()`` makes
``import celery`` return this module)."""

from __future__ import annotations

import types
import uuid as _uuid

from pgtasks.compat.app import Celery
from pgtasks.compat.canvas import (
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
from pgtasks.compat.current import current_app as _current_app
from pgtasks.compat.local import Proxy
from pgtasks.compat.registration import shared_task
from pgtasks.compat.request import current_task_object
from pgtasks.compat.task import Task

VERSION = (5, 4, 0)
__version__ = "5.4.0"
version_info = VERSION
SERIES = "pgtasks"

current_app = Proxy(_current_app)
current_task = Proxy(current_task_object)
# Celery's old ``celery.registry`` module: ``registry.tasks`` is the current app's tasks.
registry = types.SimpleNamespace()
registry.tasks = Proxy(lambda: _current_app().tasks)


def uuid() -> str:
    """A new task id."""
    return str(_uuid.uuid4())


__all__ = [
    "Celery",
    "Signature",
    "Task",
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
    "xmap",
    "xstarmap",
]


def __getattr__(name: str) -> types.ModuleType:
    """``from celery import bootsteps``: a Celery submodule served on first use (the lazy and
    refused ones of :mod:`pgtasks.compat.install`)."""
    if not name.startswith("__"):
        # why: install imports this module; the lookup is for names it serves lazily
        from pgtasks.compat.install import load_lazy

        module = load_lazy(f"celery.{name}")
        if module is not None:
            return module
    raise AttributeError(f"module 'celery' has no attribute {name!r}")
