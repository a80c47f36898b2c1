"""Celery's ``celery.utils.imports``: objects by dotted path (``symbol_by_name`` is kombu's,
re-exported as Celery does) and the dotted name of a class."""

from __future__ import annotations

from typing import Any

from pgtasks.compat.kombu.utils.imports import symbol_by_name

__all__ = ["instantiate", "qualname", "symbol_by_name"]


def qualname(obj: Any) -> str:
    """``module.Name`` of a class or an object's class."""
    if not hasattr(obj, "__name__") and hasattr(obj, "__class__"):
        obj = obj.__class__
    return f"{obj.__module__}.{getattr(obj, '__qualname__', obj.__name__)}"


def instantiate(name: Any, *args: Any, **kwargs: Any) -> Any:
    """An instance of the class a dotted path names."""
    return symbol_by_name(name)(*args, **kwargs)
