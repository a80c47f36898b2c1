"""Finding the application named by ``-A``, the way Celery does."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from pgtasks.app import App
from pgtasks.engine.errors import ConfigurationError


def load_app(spec: str) -> App:
    """Resolve ``-A spec``: ``module:attr``; else the module's ``app``, else ``celery``, else
    the submodule ``module.celery``, else the one App instance in the module."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like celery: the current folder is importable
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise ConfigurationError(f"-A {spec}: no module named {exc.name!r} (from {os.getcwd()})") from exc
        raise
    if attr:
        found = _attr_path(module, attr)
        if found is None:
            raise ConfigurationError(f"-A {spec}: module {module_name!r} has no attribute {attr!r}")
        return _as_app(found, spec)
    for name in ("app", "celery"):
        candidate = getattr(module, name, None)
        if isinstance(candidate, App):
            return candidate
    try:
        sub = importlib.import_module(f"{module_name}.celery")
    except ModuleNotFoundError as exc:
        if exc.name != f"{module_name}.celery":
            raise
    else:
        for name in ("app", "celery"):
            candidate = getattr(sub, name, None)
            if isinstance(candidate, App):
                return candidate
    apps = [v for v in vars(module).values() if isinstance(v, App)]
    if len(apps) == 1:
        return apps[0]
    if not apps:
        raise ConfigurationError(f"-A {spec}: module {module_name!r} defines no pgtasks App")
    raise ConfigurationError(
        f"-A {spec}: module {module_name!r} has {len(apps)} Apps; name one as module:attr"
    )


def _attr_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _as_app(value: Any, spec: str) -> App:
    if callable(value) and not isinstance(value, App):
        value = value()
    if not isinstance(value, App):
        raise ConfigurationError(f"-A {spec}: {type(value).__name__} is not a pgtasks App")
    return value
