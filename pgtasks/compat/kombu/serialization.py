"""kombu's ``kombu.serialization``: ``register`` (an application's own serializer) is accepted
and remembered; pgtasks stores values as JSON (or pickle when the application opts in), so a
registered serializer is not used (``pgtasks celery-check`` lists it)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("pgtasks.compat")

__all__ = ["register", "registered_serializers", "registry"]

_serializers: dict[str, tuple[Any, Any, str, str]] = {}


def register(
    name: str, encoder: Any, decoder: Any, content_type: str, content_encoding: str = "utf-8"
) -> None:
    """kombu's ``serialization.register``: remembered, but pgtasks stores values as JSON (or
    pickle when the application opts in); other serializers are not used."""
    _serializers[name] = (encoder, decoder, content_type, content_encoding)
    log.debug("kombu.serialization.register(%r): accepted; pgtasks serializes with json", name)


def registered_serializers() -> list[str]:
    """The names given to :func:`register`, sorted."""
    return sorted(_serializers)


registry = registered_serializers
