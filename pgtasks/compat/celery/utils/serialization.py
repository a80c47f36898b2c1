"""Celery's ``celery.utils.serialization``: base64 text and Celery's reading of booleans."""

from __future__ import annotations

import base64
from typing import Any

__all__ = ["b64decode", "b64encode", "strtobool"]


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
