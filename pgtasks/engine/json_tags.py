"""JSON with tagged values: the JSON codec's core, beneath serialization and failures.

Besides JSON's own types it carries datetime, date, time, timedelta, UUID, Decimal, bytes, NaN
and the infinities as tagged objects (``{"__type__": "bytes", "__value__": "aGk="}``); a user's
dict of that very shape is escaped on the way in, so plain data cannot forge a tag. Imports
nothing of pgtasks: the stored errors (failures.py) use it for exception arguments, and
serialization.py for every value.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable
from typing import Any

_TYPE, _VALUE = "__type__", "__value__"
_NON_FINITE = ("nan", "inf", "-inf")  # what a float tag holds; anything else stays a dict
_TAG_KEY = json.dumps(_TYPE)  # in the text of every value that holds a tag or looks like one


_ENCODERS: list[tuple[type, str, Callable[[Any], Any]]] = [
    (dt.datetime, "datetime", lambda v: v.isoformat()),
    (dt.date, "date", lambda v: v.isoformat()),
    (dt.time, "time", lambda v: v.isoformat()),
    (dt.timedelta, "timedelta", lambda v: [v.days, v.seconds, v.microseconds]),
    (uuid.UUID, "uuid", str),
    (decimal.Decimal, "decimal", str),
    (bytes, "bytes", lambda v: base64.b64encode(v).decode("ascii")),
]
_DECODERS: dict[str, Callable[[Any], Any]] = {
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": lambda v: dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2]),
    "uuid": uuid.UUID,
    "decimal": decimal.Decimal,
    "bytes": base64.b64decode,
    "dict": dict,  # an escaped user dict (see _escaped)
    "float": lambda v: float(v) if v in _NON_FINITE else {_TYPE: "float", _VALUE: v},  # see _tag_non_finite
}


def _encode_default(value: Any) -> Any:
    for cls, name, encode in _ENCODERS:
        if isinstance(value, cls):
            return {_TYPE: name, _VALUE: encode(value)}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _escaped(value: Any) -> Any:
    """``value`` with every dict shaped like a tag (the keys ``__type__`` and ``__value__``
    alone) replaced by the tag of a dict, its items as pairs; the rest as it is."""
    if isinstance(value, dict):
        if len(value) == 2 and _TYPE in value and _VALUE in value:
            return {_TYPE: "dict", _VALUE: [[k, _escaped(v)] for k, v in value.items()]}
        return {k: _escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    return value


def _tag_non_finite(value: Any) -> Any:
    """``value`` with each NaN and infinity replaced by its tag (``{"__type__": "float",
    "__value__": "nan"}``): JSON has no such numbers, and kombu's JSON, which writes them
    anyway, lets a Celery task return them."""
    if isinstance(value, float) and not math.isfinite(value):
        return {_TYPE: "float", _VALUE: repr(float(value))}
    if isinstance(value, dict):
        return {k: _tag_non_finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tag_non_finite(v) for v in value]
    return value


def _decode_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 2 and _TYPE in obj and _VALUE in obj and obj[_TYPE] in _DECODERS:
        return _DECODERS[obj[_TYPE]](obj[_VALUE])
    return obj


class JsonSerializer:
    """Strict JSON (NaN and infinities tagged, never written as such) with tagged extra types."""

    tag = "json"

    def __init__(self) -> None:
        # One encoder for every call: json.dumps with options builds a new one each time.
        self._encoder = json.JSONEncoder(default=_encode_default, allow_nan=False, separators=(",", ":"))
        self._decoder = json.JSONDecoder(object_hook=_decode_hook)  # the same for loads

    def dumps(self, value: Any) -> str:
        try:
            text = self._encoder.encode(value)
        except ValueError as exc:
            if "Out of range float" not in str(exc):
                raise
            # Only now walked: the user's tag-shaped dicts escaped first, then the numbers tagged.
            return self._encoder.encode(_tag_non_finite(_escaped(value)))
        if _TAG_KEY in text:  # a tag, or a user's dict that may look like one: escape those
            text = self._encoder.encode(_escaped(value))
        return text

    def loads(self, text: str) -> Any:
        return self._decoder.decode(text)
