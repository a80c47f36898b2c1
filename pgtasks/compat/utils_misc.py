"""Celery's small utility modules, one namespace each as applications and libraries import
them: ``celery.utils`` (this module), ``celery.utils.functional``, ``celery.utils.imports``,
``celery.utils.serialization``, ``celery.utils.nodenames`` and ``celery.utils.objects``
(see :data:`SUBMODULES`)."""

from __future__ import annotations

import base64
import functools
import importlib
import socket
import types
import uuid as _uuid
from collections.abc import Iterable, Iterator
from typing import Any

cached_property = functools.cached_property
NODENAME_SEP = "@"


def uuid() -> str:
    """A new unique id (Celery's task ids are UUID4 strings)."""
    return str(_uuid.uuid4())


gen_unique_id = uuid


def noop(*args: Any, **kwargs: Any) -> None:
    """Take anything, do nothing."""


def get_full_cls_name(obj: Any) -> str:
    """``module.Class`` of a class."""
    return f"{obj.__module__}.{obj.__qualname__}"


def qualname(obj: Any) -> str:
    """``module.Name`` of a class or an object's class."""
    if not hasattr(obj, "__name__") and hasattr(obj, "__class__"):
        obj = obj.__class__
    return f"{obj.__module__}.{getattr(obj, '__qualname__', obj.__name__)}"


def symbol_by_name(
    name: Any,
    aliases: dict[str, str] | None = None,
    imp: Any = None,
    package: str | None = None,
    sep: str = ".",
    default: Any = None,
    **kwargs: Any,
) -> Any:
    """The object a dotted path names: ``'pkg.mod:attr'`` or ``'pkg.mod.attr'``."""
    if not isinstance(name, str):
        return name
    name = (aliases or {}).get(name, name)
    module_name, _, attribute = name.rpartition(":") if ":" in name else name.rpartition(sep)
    try:
        module = (imp or importlib.import_module)(module_name or attribute, package=package)
        return getattr(module, attribute) if module_name else module
    except (ImportError, AttributeError):
        if default is not None:
            return default
        raise


def instantiate(name: Any, *args: Any, **kwargs: Any) -> Any:
    """An instance of the class a dotted path names."""
    return symbol_by_name(name)(*args, **kwargs)


def first(predicate: Any, iterable: Iterable[Any]) -> Any:
    """The first item the predicate accepts (any true item when it is None), else None."""
    for item in iterable:
        if (predicate or bool)(item):
            return item
    return None


def is_list(obj: Any, scalars: tuple[type, ...] = (dict, str, bytes)) -> bool:
    """True for an iterable that is not a mapping or a string."""
    return isinstance(obj, Iterable) and not isinstance(obj, scalars)


def maybe_list(obj: Any, scalars: tuple[type, ...] = (dict, str, bytes)) -> Any:
    """``obj`` in a list unless it is one already (None stays None)."""
    return obj if obj is None or is_list(obj, scalars) else [obj]


def chunks(it: Iterable[Any], n: int) -> Iterator[list[Any]]:
    """Lists of ``n`` items of ``it`` (the last one shorter)."""
    batch: list[Any] = []
    for item in it:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def b64encode(s: bytes) -> str:
    return base64.b64encode(s).decode("ascii")


def b64decode(s: str | bytes) -> bytes:
    return base64.b64decode(s)


def strtobool(term: Any, table: dict[str, bool] | None = None) -> bool:
    """``'yes'``/``'no'``, ``'1'``/``'0'``, ``'true'``/``'false'``, ``'on'``/``'off'`` as a bool."""
    if isinstance(term, str):
        table = table or {
            "false": False,
            "no": False,
            "0": False,
            "off": False,
            "true": True,
            "yes": True,
            "1": True,
            "on": True,
        }
        try:
            return table[term.lower()]
        except KeyError:
            raise TypeError(f"Cannot coerce {term!r} to type bool") from None
    return bool(term)


def gethostname() -> str:
    return socket.gethostname()


def nodename(name: str, hostname: str) -> str:
    """``name@hostname``."""
    return NODENAME_SEP.join((name, hostname))


def nodesplit(name: str) -> tuple[str | None, str]:
    """``('name', 'host')`` of ``name@host``; ``(None, 'host')`` without a name."""
    parts = name.split(NODENAME_SEP, 1)
    return (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def default_nodename(hostname: str | None) -> str:
    name, host = nodesplit(hostname or "")
    return nodename(name or "celery", host or gethostname())


def worker_direct(hostname: str) -> str:
    """The name of a worker's own queue in Celery (pgtasks has none; kept for imports)."""
    return f"{hostname}.dq2"


def _namespace(name: str, names: dict[str, Any]) -> types.ModuleType:
    module = types.ModuleType(name, f"pgtasks.compat: Celery's {name!r}")
    for key, value in names.items():
        setattr(module, key, value)
    return module


def submodules() -> dict[str, types.ModuleType]:
    """The Celery utility submodules this module serves, as module objects."""
    return {
        "celery.utils.functional": _namespace(
            "celery.utils.functional",
            {"noop": noop, "first": first, "is_list": is_list, "maybe_list": maybe_list, "chunks": chunks},
        ),
        "celery.utils.imports": _namespace(
            "celery.utils.imports",
            {"symbol_by_name": symbol_by_name, "instantiate": instantiate, "qualname": qualname},
        ),
        "celery.utils.serialization": _namespace(
            "celery.utils.serialization",
            {"b64encode": b64encode, "b64decode": b64decode, "strtobool": strtobool},
        ),
        "celery.utils.nodenames": _namespace(
            "celery.utils.nodenames",
            {
                "gethostname": gethostname,
                "nodename": nodename,
                "nodesplit": nodesplit,
                "default_nodename": default_nodename,
                "worker_direct": worker_direct,
                "NODENAME_SEP": NODENAME_SEP,
            },
        ),
        "celery.utils.objects": _namespace("celery.utils.objects", {"cached_property": cached_property}),
    }
