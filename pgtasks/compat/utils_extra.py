"""Celery's small utility modules that applications and their libraries import:
``celery.utils.text``, ``.saferepr``, ``.iso8601``, ``.collections``, ``.graph``,
``.dispatch``, and ``celery.app.log``'s ``TaskFormatter``, ``celery.app.utils``,
``celery.app.defaults``, ``celery.app.registry``. Each name works as Celery documents it."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import logging
import platform
import reprlib
import textwrap
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from pgtasks.compat.conf import DEFAULTS as _PGTASKS_DEFAULTS
from pgtasks.compat.conf import CeleryConf
from pgtasks.compat.registration import TaskRegistry
from pgtasks.compat.request import current_request
from pgtasks.compat.result_extras import DependencyGraph
from pgtasks.compat.setting_names import CURRENT_NAMES
from pgtasks.compat.signals import Signal

# -- celery.utils.text ---------------------------------------------------------------------


def truncate(s: str, maxlen: int = 128, suffix: str = "...") -> str:
    """``s`` cut to ``maxlen`` characters, ``suffix`` appended when cut."""
    return s[:maxlen] + suffix if maxlen and len(s) >= maxlen else s


def abbr(s: str, max: int, ellipsis: str = "...") -> str:
    if s is None:
        return "???"
    return s[: max - len(ellipsis)] + ellipsis if len(s) > max else s


def abbrtask(s: str, max: int) -> str:
    """A dotted task name shortened from the left, keeping its last part."""
    if s is None:
        return "???"
    if len(s) > max:
        module, _, cls = s.rpartition(".")
        module = abbr(module, max - len(cls) - 3, "[.]")
        return module + "[.]" + cls
    return s


def indent(t: str, indent: int = 0, sep: str = "\n") -> str:
    return sep.join(" " * indent + line for line in t.split(sep))


def pluralize(n: float, text: str, suffix: str = "s") -> str:
    return text + suffix if n != 1 else text


def str_to_list(s: str | list[str]) -> list[str]:
    return s.split(",") if isinstance(s, str) else s


def dedent(s: str, sep: str = "\n") -> str:
    return sep.join(line.strip() for line in s.split(sep))


def fill_paragraphs(s: str, width: int, sep: str = "\n") -> str:
    return sep.join(textwrap.fill(part, width) for part in s.split(sep))


def pretty(value: Any, width: int = 80, nl_width: int = 80, sep: str = "\n", **kw: Any) -> str:
    return saferepr(value)


def simple_format(s: str, keys: dict[str, Any], expand: str = r"\1", **kwargs: Any) -> str:
    """``%(name)s``-style placeholders of ``keys`` filled into ``s``."""
    for key, value in keys.items():
        s = s.replace(f"%{key}", str(value))
    return s


# -- celery.utils.saferepr -----------------------------------------------------------------


def saferepr(o: Any, maxlen: int | None = None, maxlevels: int = 3, seen: Any = None) -> str:
    """A repr that never raises and stays short (nested containers cut at ``maxlevels``)."""
    shortener = reprlib.Repr()
    shortener.maxlevel = maxlevels
    shortener.maxstring = shortener.maxother = maxlen or 1024
    try:
        text = shortener.repr(o)
    except Exception as exc:  # a __repr__ that raises
        text = f"<{type(o).__name__} object (repr failed: {type(exc).__name__})>"
    return truncate(text, maxlen) if maxlen else text


# -- celery.utils.iso8601 ------------------------------------------------------------------


def parse_iso8601(datestring: str) -> dt.datetime:
    """An ISO 8601 time (``Z`` or an offset, or naive) as a datetime; ValueError if it is not one."""
    text = datestring.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return dt.datetime.fromisoformat(text)


# -- celery.utils.collections --------------------------------------------------------------


class AttributeDict(dict):  # type: ignore[type-arg]
    """A dict whose keys are also attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class LimitedSet:
    """A set of at most ``maxlen`` items (the oldest go first), Celery's store of revoked ids."""

    def __init__(
        self, maxlen: int = 0, expires: float = 0, data: Iterable[Any] | None = None, minlen: int = 0
    ) -> None:
        self.maxlen, self.expires, self.minlen = maxlen, expires, minlen
        self._data: OrderedDict[Any, float] = OrderedDict()
        self.update(data or ())

    def add(self, item: Any, now: float | None = None) -> None:
        self._data.pop(item, None)
        self._data[item] = now if now is not None else dt.datetime.now().timestamp()
        self.purge()

    def update(self, other: Iterable[Any]) -> None:
        for item in other:
            self.add(item)

    def discard(self, item: Any) -> None:
        self._data.pop(item, None)

    pop_value = discard

    def purge(self, now: float | None = None) -> None:
        while self.maxlen and len(self._data) > max(self.maxlen, self.minlen):
            self._data.popitem(last=False)
        if self.expires:
            moment = now if now is not None else dt.datetime.now().timestamp()
            for item, added in list(self._data.items()):
                if len(self._data) <= self.minlen or moment - added <= self.expires:
                    break
                del self._data[item]

    def clear(self) -> None:
        self._data.clear()

    def as_dict(self) -> dict[Any, float]:
        return dict(self._data)

    def __contains__(self, item: object) -> bool:
        return item in self._data

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


# -- celery.app.log ------------------------------------------------------------------------


class TaskFormatter(logging.Formatter):
    """A formatter for task loggers: records get ``task_id`` and ``task_name`` (``???`` outside
    a task), as in Celery's ``worker_task_log_format``."""

    def format(self, record: logging.LogRecord) -> str:
        request = current_request()
        if request is not None and request.id:
            record.__dict__.setdefault("task_id", request.id)
            record.__dict__.setdefault("task_name", request.task)
        else:
            record.__dict__.setdefault("task_id", "???")
            record.__dict__.setdefault("task_name", "???")
        return super().format(record)


# -- celery.app.defaults, celery.app.utils ---------------------------------------------------


def _defaults() -> dict[str, Any]:
    """Every setting Celery knows, with its default (None where pgtasks reads none)."""
    return {name: _PGTASKS_DEFAULTS.get(name) for name in sorted(CURRENT_NAMES)}


DEFAULTS = _defaults()
Settings = CeleryConf


def appstr(app: Any) -> str:
    """``name at 0x...`` of an app, as Celery's banner shows it."""
    return f"{app.main or '__main__'} at {id(app):#x}"


def bugreport(app: Any) -> str:
    """The versions and settings to paste into a bug report."""
    try:
        version = importlib.metadata.version("pgtasks")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    lines = [f"software -> pgtasks:{version} (Celery API) py:{platform.python_version()}"]
    lines.append(f"platform -> system:{platform.system()} arch:{platform.machine()}")
    lines.append(f"app -> {appstr(app)}")
    return "\n".join(lines)


__all__ = [
    "DEFAULTS",
    "AttributeDict",
    "DependencyGraph",
    "LimitedSet",
    "Settings",
    "Signal",
    "TaskFormatter",
    "TaskRegistry",
    "abbr",
    "abbrtask",
    "appstr",
    "bugreport",
    "dedent",
    "fill_paragraphs",
    "indent",
    "parse_iso8601",
    "pluralize",
    "pretty",
    "saferepr",
    "simple_format",
    "str_to_list",
    "truncate",
]
