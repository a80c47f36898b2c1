"""Celery's ``celery.utils.imports``: objects by dotted path (``symbol_by_name`` is kombu's,
re-exported as Celery does), the dotted name of a class, and modules imported with the current
directory on the path (``import_from_cwd``, as a worker started in a project finds it)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from pgtasks.compat.kombu.utils.imports import symbol_by_name

__all__ = ["gen_task_name", "import_from_cwd", "instantiate", "qualname", "symbol_by_name"]


def gen_task_name(app: Any, name: str, module_name: str | None) -> str:
    """The name Celery gives a task ``name`` defined in ``module_name`` in ``app``:
    ``module.name``, or ``<app main>.name`` for a task of the script being run (``__main__``)."""
    return str(app.gen_task_name(name, module_name))


def qualname(obj: Any) -> str:
    """``module.Name`` of a class or an object's class."""
    if not hasattr(obj, "__name__") and hasattr(obj, "__class__"):
        obj = obj.__class__
    return f"{obj.__module__}.{getattr(obj, '__qualname__', obj.__name__)}"


def instantiate(name: Any, *args: Any, **kwargs: Any) -> Any:
    """An instance of the class a dotted path names."""
    return symbol_by_name(name)(*args, **kwargs)


def import_from_cwd(module: str, imp: Callable[..., Any] | None = None, package: str | None = None) -> Any:
    """``imp(module)`` (``importlib.import_module`` by default) with the current directory
    first on ``sys.path`` for the time of the import."""
    imp = importlib.import_module if imp is None else imp
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return imp(module, package=package)
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
