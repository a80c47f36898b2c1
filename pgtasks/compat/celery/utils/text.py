"""Celery's ``celery.utils.text``: shortening, indenting and formatting text for logs."""

from __future__ import annotations

import pprint
import re
import textwrap
from typing import Any

__all__ = [
    "abbr",
    "abbrtask",
    "dedent",
    "fill_paragraphs",
    "indent",
    "pluralize",
    "pretty",
    "simple_format",
    "str_to_list",
    "truncate",
]


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
    """``value`` pretty-printed (``pprint.pformat``) within ``width`` columns."""
    return pprint.pformat(value, width=width)


_FORMAT_SIGN = re.compile(r"%([%\w])")


def simple_format(
    s: str, keys: dict[str, Any], pattern: re.Pattern[str] = _FORMAT_SIGN, expand: str = r"\1"
) -> str:
    """``s`` with each ``%x`` replaced by ``keys['x']`` (called first when it is callable), as
    Celery's: ``%%`` is a ``%``, and a key that ``keys`` lacks is a ValueError naming it. An
    empty or None ``s`` is returned as given."""
    if not s:
        return s
    keys = {"%": "%", **keys}

    def resolve(match: re.Match[str]) -> str:
        key = match.expand(expand)
        if key not in keys:
            raise ValueError(f"Unknown format %{key} in string {s!r}: escape the sign as %%{key} to keep it")
        value = keys[key]
        return str(value() if callable(value) else value)

    return pattern.sub(resolve, s)
