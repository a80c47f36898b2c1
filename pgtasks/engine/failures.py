"""Exceptions stored as data and rebuilt only from types the application already knows.

A failed task's ``error`` column holds JSON: the exception's module, qualified name, message,
arguments (when JSON can carry them) and traceback text. Rebuilding looks the type up only in
modules already imported by this process that are trusted: builtins, pgtasks' own modules and
the modules the application registered tasks from. A row can never make a process import a
module; anything else comes back as :class:`~pgtasks.engine.errors.TaskError`.
"""

from __future__ import annotations

import builtins
import json
import sys
import traceback
from collections.abc import Iterable
from typing import Any

from pgtasks.engine.errors import TaskError

TRUSTED_PREFIXES = ("pgtasks.",)


def encode_exception(exc: BaseException) -> str:
    """The JSON text stored in ``error`` for ``exc``."""
    cls = type(exc)
    try:
        args: list[Any] | None = json.loads(json.dumps(list(exc.args), allow_nan=False))
    except (TypeError, ValueError):
        args = None
    return json.dumps(
        {
            "module": cls.__module__,
            "type": cls.__qualname__,
            "message": str(exc),
            "args": args,
            "traceback": "".join(traceback.format_exception(cls, exc, exc.__traceback__)),
        }
    )


def error_summary(error_text: str | None) -> str:
    """A one-line ``Type: message`` for display."""
    if not error_text:
        return ""
    try:
        data = json.loads(error_text)
        return f"{data.get('type', 'Error')}: {data.get('message', '')}"
    except (ValueError, AttributeError):
        return error_text[:200]


def decode_exception(error_text: str, trusted_modules: Iterable[str] = ()) -> BaseException:
    """Rebuild the stored exception if its type is trusted, else a TaskError."""
    try:
        data = json.loads(error_text)
        module, qualname = str(data["module"]), str(data["type"])
        message, remote_tb = str(data.get("message", "")), str(data.get("traceback", ""))
        args = data.get("args")
    except (ValueError, KeyError, TypeError):
        return TaskError("UnknownError", f"unreadable error record: {error_text[:200]!r}")
    cls = _trusted_class(module, qualname, set(trusted_modules))
    if cls is not None:
        for attempt in ((args,) if isinstance(args, list) else ()) + ([message],):
            try:
                exc = cls(*attempt)
            except Exception:
                continue
            exc.remote_traceback = remote_tb  # type: ignore[attr-defined]
            return exc
    name = qualname if module == "builtins" else f"{module}.{qualname}"
    return TaskError(name, message, remote_tb)


def _trusted_class(module: str, qualname: str, trusted: set[str]) -> type[BaseException] | None:
    if module == "builtins":
        owner: Any = builtins
    elif module in trusted or module.startswith(TRUSTED_PREFIXES):
        owner = sys.modules.get(module)  # never import: only what is already loaded
        if owner is None:
            return None
    else:
        return None
    for part in qualname.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    if isinstance(owner, type) and issubclass(owner, Exception):
        return owner
    return None
