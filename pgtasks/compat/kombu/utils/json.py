"""kombu's ``kombu.utils.json``: JSON with kombu's encoder (datetimes, decimals and UUIDs as
text) and its type extension (``register_type``). pgtasks' own serializer does not use it;
libraries that call it get kombu's behaviour."""

from __future__ import annotations

import datetime as dt
import decimal
import json as _json
import uuid as _uuid
from collections.abc import Callable
from typing import Any

__all__ = ["JSONEncoder", "dumps", "loads", "register_type"]

_encoders: dict[type, tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = {}


class JSONEncoder(_json.JSONEncoder):
    """kombu's encoder: datetimes, dates, times as ISO 8601, decimals and UUIDs as text,
    and the types given to :func:`register_type`."""

    def default(self, o: Any) -> Any:
        for kind, (marker, encoder, _) in _encoders.items():
            if isinstance(o, kind):
                return {"__type__": marker, "__value__": encoder(o)}
        if isinstance(o, (dt.datetime, dt.date, dt.time)):
            return o.isoformat()
        if isinstance(o, (decimal.Decimal, _uuid.UUID)):
            return str(o)
        return super().default(o)


def _decode_hook(obj: dict[str, Any]) -> Any:
    marker = obj.get("__type__")
    if marker is not None and "__value__" in obj:
        for registered, _, decoder in _encoders.values():
            if registered == marker:
                return decoder(obj["__value__"])
    return obj


def dumps(s: Any, _dumps: Callable[..., str] = _json.dumps, cls: type = JSONEncoder, **kwargs: Any) -> str:
    """JSON text of ``s``, with kombu's encoder."""
    return _dumps(s, cls=cls, **kwargs)


def loads(s: str | bytes | bytearray, _loads: Callable[..., Any] = _json.loads, **kwargs: Any) -> Any:
    """The value of JSON text (bytes are decoded as UTF-8)."""
    if isinstance(s, (bytes, bytearray)):
        s = bytes(s).decode("utf-8")
    return _loads(s, object_hook=_decode_hook, **kwargs)


def register_type(
    t: type, marker: str, encoder: Callable[[Any], Any], decoder: Callable[[Any], Any] = lambda v: v
) -> None:
    """Encode values of ``t`` as ``{"__type__": marker, "__value__": encoder(v)}`` in
    :func:`dumps`, decoded back by :func:`loads` (kombu's JSON extension; pgtasks' own
    serializer does not use it)."""
    _encoders[t] = (marker, encoder, decoder)
