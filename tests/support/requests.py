"""The engine's per-task request built from flat keywords, as tests like to write them."""

from __future__ import annotations

from typing import Any

from pgtasks.engine.options import EnqueueRequest, SendOptions

ROW_FIELDS = ("args", "kwargs", "application_version")


def enqueue_request(name: str, **fields: Any) -> EnqueueRequest:
    """``EnqueueRequest(name, ...)`` with ``args``, ``kwargs`` and ``application_version`` as
    given (unchecked: tests pass wrong types on purpose) and every other keyword a
    :class:`SendOptions` field."""
    row = {key: fields.pop(key) for key in ROW_FIELDS if key in fields}
    return EnqueueRequest(name, options=SendOptions(**fields), **row)
