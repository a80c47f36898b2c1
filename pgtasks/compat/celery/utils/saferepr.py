"""Celery's ``celery.utils.saferepr``: a repr for logs that never raises and stays short."""

from __future__ import annotations

import itertools
import reprlib
import sys
from typing import Any

from pgtasks.compat.celery.utils.text import truncate

__all__ = ["saferepr"]


class _Shortener(reprlib.Repr):
    """reprlib's nesting limit (``[...]`` below ``maxlevels``) without its other limits: as
    Celery's, every item is shown until the text is ``maxlen`` long (reprlib stops lists at 6
    items, dicts at 4), dicts keep their order (reprlib sorts them) and a long string keeps its
    start (reprlib cuts out its middle). Items past what ``maxlen`` can show are not
    rendered at all, so a huge argument costs no more than a short one."""

    def __init__(self, maxlen: int | None, maxlevels: int) -> None:
        super().__init__()
        room = sys.maxsize if maxlen is None else maxlen
        self.maxlevel = maxlevels
        # each item takes 3 characters at least ("0, "): more than room // 2 never show
        many = room // 2 + 1
        self.maxtuple = self.maxlist = self.maxarray = self.maxset = many
        self.maxfrozenset = self.maxdeque = self.maxdict = many
        self.maxstring = self.maxlong = self.maxother = room

    def repr_str(self, x: str, level: int) -> str:
        if len(x) <= self.maxstring:
            return repr(x)
        return repr(x[: self.maxstring]) + "..."

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        below, first = level - 1, itertools.islice(x.items(), self.maxdict)
        shown = [f"{self.repr1(k, below)}: {self.repr1(v, below)}" for k, v in first]
        return "{" + ", ".join(shown) + (", ..." if len(x) > self.maxdict else "") + "}"


def saferepr(o: Any, maxlen: int | None = None, maxlevels: int = 3, seen: Any = None) -> str:
    """A repr that never raises and stays within ``maxlen`` characters (then ``...``), nested
    containers cut at ``maxlevels``."""
    try:
        text = _Shortener(maxlen, maxlevels).repr(o)
    except Exception as exc:  # a __repr__ that raises
        text = f"<{type(o).__name__} object (repr failed: {type(exc).__name__})>"
    return truncate(text, maxlen) if maxlen else text
