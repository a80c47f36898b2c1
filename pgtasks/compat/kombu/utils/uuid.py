"""kombu's ``kombu.utils.uuid``: a new unique id, as Celery makes task ids."""

from __future__ import annotations

import uuid as _uuid

__all__ = ["uuid"]


def uuid() -> str:
    """A new unique id (a UUID4 string)."""
    return str(_uuid.uuid4())
