"""kombu's ``kombu.utils.imports``: :func:`symbol_by_name`, the object a dotted path names
(Celery reads ``task_cls``, ``task_routes`` entries and ``config_from_object`` paths with it)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["symbol_by_name"]


def symbol_by_name(
    name: Any,
    aliases: dict[str, str] | None = None,
    imp: Callable[..., Any] | None = None,
    package: str | None = None,
    sep: str = ".",
    default: Any = None,
    **kwargs: Any,
) -> Any:
    """The object ``name`` names: ``'pkg.module'``, ``'pkg.module:attr'`` (``attr`` may be
    dotted) or ``'pkg.module.attr'``; anything not a string as given. ``aliases`` maps short
    names to paths; ``default`` is returned instead of the ImportError or AttributeError."""
    if not isinstance(name, str):
        return name
    path = (aliases or {}).get(name, name)
    importer = imp or importlib.import_module
    try:
        return _resolve(path, importer, package, sep)
    except (ImportError, AttributeError):
        if default is not None:
            return default
        raise


def _resolve(path: str, importer: Callable[..., Any], package: str | None, sep: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        target = importer(module_name, package=package)
    except ModuleNotFoundError as missing:
        # ``pkg.module.attr``: the module is the path less its last part. A module that is
        # there but misses a dependency of its own raises as it is.
        if attr or sep not in module_name or missing.name != module_name:
            raise
        module_name, _, attr = module_name.rpartition(sep)
        target = importer(module_name, package=package)
        if not hasattr(target, attr):
            raise missing from None
    for part in attr.split(".") if attr else ():
        target = getattr(target, part)
    return target
