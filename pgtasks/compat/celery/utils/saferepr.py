"""Celery's ``celery.utils.saferepr``: a repr for logs that never raises and stays short."""

from __future__ import annotations

import reprlib
from typing import Any

from pgtasks.compat.celery.utils.text import truncate

__all__ = ["saferepr"]


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
