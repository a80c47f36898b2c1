"""Celery's ``celery.result.ResultBase``: the base class of every result."""

from __future__ import annotations

from typing import Any

__all__ = ["ResultBase"]


class ResultBase:
    """Base class for results."""

    parent: Any = None
    # Sent with ignore_result: Celery stores nothing, and get() returns None at once.
    ignored: bool = False
