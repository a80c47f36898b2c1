"""Celery's dict of an exception (``exc_type``, ``exc_message``, ``exc_module``), both ways:
what result backends store for a failure and what results read back. Kept apart from
``celery.backends.base`` so that ``celery.result`` reads it without importing the backends
(which build results)."""

from __future__ import annotations

import sys
from typing import Any

from pgtasks.compat.kombu.utils import json as kombu_json

# Where pgtasks serves Celery's own exception classes: rows name Celery's module, as on Celery.
CELERY_MODULES = {"pgtasks.compat.celery.exceptions": "celery.exceptions"}


def prepare_exception(exc: BaseException, serializer: str = "json") -> Any:
    """The exception itself for pickle, else Celery's dict of it (``exc_type``,
    ``exc_message``: its arguments, each that JSON cannot carry as its repr; ``exc_module``)."""
    if serializer == "pickle":
        return exc
    module = type(exc).__module__
    return {
        "exc_type": type(exc).__qualname__,
        "exc_message": [arg if _json_safe(arg) else _safe_repr(arg) for arg in exc.args],
        "exc_module": CELERY_MODULES.get(module, module),
    }


def exception_to_python(exc: Any) -> Any:
    """An exception from Celery's dict of one (an exception is returned as it is; anything
    else too). Its class is found in a module already imported (stored data never imports
    a module); otherwise a class of that name is made, subclassing Exception."""
    if not isinstance(exc, dict) or "exc_type" not in exc:
        return exc
    name = str(exc["exc_type"])
    module_name = str(exc.get("exc_module") or "builtins")
    message = exc.get("exc_message")
    args = tuple(message) if isinstance(message, (list, tuple)) else (message,)
    module = sys.modules.get(module_name)
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None) if found is not None else None
    if isinstance(found, type) and issubclass(found, BaseException):
        try:
            return found(*args)
        except Exception:
            pass  # a constructor that takes other arguments: the named stand-in below
    return type(name.rsplit(".", 1)[-1], (Exception,), {"__module__": module_name})(*args)


def _json_safe(value: Any) -> bool:
    try:
        kombu_json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _safe_repr(value: Any) -> str:
    """An exception argument JSON cannot carry, as text (its repr, as Celery stores it)."""
    try:
        return repr(value)
    except Exception:
        return f"<unrepresentable {type(value).__name__}>"
