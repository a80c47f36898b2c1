"""Celery's per-call message options that pgtasks cannot carry out differently from the app:
``serializer``, ``compression`` and ``headers``, checked at the send so that a wrong one is
refused, never silently replaced.

The engine encodes every task of an application with its one serializer (``task_serializer``):
a per-call ``serializer`` naming it is accepted (no effect); one it does not know raises
kombu's ``SerializerNotInstalled`` as Celery does; another it knows is accepted when the app
accepts it (``accept_content``: its workers read it, so the task is sent, encoded with the
app's serializer; arguments that serializer cannot encode raise ``EncodeError`` naming them),
and refused with ConfigurationError otherwise, where Celery's workers would refuse the
message (``ContentDisallowed``) and the task would never run. A compression
of kombu's is accepted and has no effect (rows are not compressed); another name raises
KeyError, as kombu does.

A task's own ``serializer`` or ``compression`` (``@app.task(serializer=...)``, a class
attribute, an annotation) is what Celery publishes each of its calls with: it is checked the
same way at each send (Celery's decorator takes any name; its ``apply_async`` fails). Eagerly
Celery only encodes the arguments, so there only an unknown serializer is refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pgtasks.compat.kombu.exceptions import SerializerNotInstalled
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.serialization import SERIALIZERS

_MIME = {"application/json": "json", "application/x-python-serialize": "pickle"}
# kombu's compression names and content types (kombu.compression); none is applied here.
COMPRESSIONS = frozenset(
    {
        "gzip",
        "zlib",
        "bzip2",
        "bzip",
        "brotli",
        "lzma",
        "xz",
        "zstd",
        "zstandard",
        "snappy",
        "application/x-gzip",
        "application/x-bz2",
        "application/x-brotli",
        "application/x-lzma",
        "application/zstd",
        "application/x-snappy",
    }
)


class UnknownSerializer(SerializerNotInstalled, ConfigurationError):
    """A ``serializer`` pgtasks has no encoder for: kombu's ``SerializerNotInstalled`` (what
    Celery raises) that the command line reports in one line, as every ConfigurationError."""


class UnknownCompression(ConfigurationError, KeyError):
    """A ``compression`` kombu does not know: a KeyError, as kombu's lookup raises."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


TASK_MODULE = "pgtasks.compat.celery.app.task"  # where Celery's Task class is served


def check_message_options(
    options: Mapping[str, Any], app_serializer: str, accepted: Collection[str], task: Any = None
) -> None:
    """Refuse a ``serializer``, ``compression`` or ``headers`` of ``apply_async`` (or of
    ``task`` itself) that pgtasks would otherwise ignore or fail on later (see the module's
    text)."""
    serializer = options.get("serializer")
    if serializer is not None:
        _check_serializer(serializer, app_serializer, accepted, "")
    elif task is not None:
        serializer = own_serializer(task)
        if serializer is not None:
            _check_serializer(serializer, app_serializer, accepted, f"task {task.name!r} has ")
    compression = options.get("compression")
    if compression is None and task is not None:
        compression = getattr(task, "compression", None)
    if compression is not None and compression not in COMPRESSIONS:
        raise UnknownCompression(
            f"unknown compression {compression!r}; kombu's are {', '.join(sorted(COMPRESSIONS))}"
        )
    headers = options.get("headers")
    if headers is not None and not isinstance(headers, Mapping) and not _pairs(headers):
        raise TypeError(f"headers must be a dict, not {type(headers).__name__} ({headers!r})")


def _pairs(value: Any) -> bool:
    """Whether ``dict(value)`` takes it (a list of key, value pairs: Celery accepts it)."""
    if isinstance(value, (str, bytes)):
        return False
    try:
        dict(value)
    except (TypeError, ValueError):
        return False
    return True


def check_eager_serializer(options: Mapping[str, Any], task: Any) -> None:
    """``task_always_eager``: Celery encodes the arguments with the call's (or the task's)
    serializer, so one pgtasks has no encoder for raises ``SerializerNotInstalled``."""
    serializer = options.get("serializer")
    if serializer is None:
        serializer = own_serializer(task)
    if serializer is not None and not _known(serializer):
        raise UnknownSerializer(f"No encoder installed for {serializer}")


def own_serializer(task: Any) -> Any:
    """The ``serializer`` ``task`` sets (on itself or a class of its own), None when it keeps
    the default of Celery's Task: the app's ``task_serializer``."""
    own = getattr(task, "__dict__", {})
    if "serializer" in own:
        return own["serializer"]
    for klass in type(task).__mro__:
        if klass.__module__ == TASK_MODULE:  # Celery's Task, known by its module: that module
            return None  # sends through this one, so it is not imported here
        if "serializer" in klass.__dict__:
            return klass.__dict__["serializer"]
    return None


def _known(serializer: Any) -> bool:
    return isinstance(serializer, str) and _MIME.get(serializer, serializer) in SERIALIZERS


def _check_serializer(serializer: Any, app_serializer: str, accepted: Collection[str], whose: str) -> None:
    if not _known(serializer):
        raise UnknownSerializer(f"No encoder installed for {serializer}")
    name = _MIME.get(serializer, serializer)
    if name != app_serializer and name not in accepted:
        raise ConfigurationError(
            f"{whose}serializer={serializer!r}: not in this app's accept_content {sorted(accepted)}, so "
            "its workers would refuse the task; pgtasks encodes every task of the app with its "
            f"task_serializer {app_serializer!r}"
        )
