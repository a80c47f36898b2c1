"""Celery's ``celery.utils.iso8601``: ISO 8601 text as a datetime."""

from __future__ import annotations

import datetime as dt

__all__ = ["parse_iso8601"]


def parse_iso8601(datestring: str) -> dt.datetime:
    """An ISO 8601 time (``Z`` or an offset, or naive) as a datetime; ValueError if it is not one."""
    text = datestring.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return dt.datetime.fromisoformat(text)
