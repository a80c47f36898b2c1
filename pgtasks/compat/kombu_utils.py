"""kombu's utility modules and exceptions as Celery libraries import them:
``kombu.utils`` (this module), ``kombu.utils.json``, ``kombu.utils.encoding``,
``kombu.utils.uuid``, ``kombu.utils.objects`` and ``kombu.exceptions`` (see
:func:`submodules`)."""

from __future__ import annotations

import datetime as dt
import decimal
import json as _json
import types
import uuid as _uuid
from collections.abc import Callable
from typing import Any

from pgtasks.compat.utils_misc import cached_property, symbol_by_name

__all__ = ["cached_property", "submodules", "symbol_by_name", "uuid"]


def uuid() -> str:
    return str(_uuid.uuid4())


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


def str_to_bytes(s: Any) -> Any:
    return s.encode() if isinstance(s, str) else s


def bytes_to_str(s: Any) -> Any:
    return s.decode(errors="replace") if isinstance(s, bytes) else s


def safe_str(s: Any, errors: str = "replace") -> str:
    """``s`` as text, never raising."""
    if isinstance(s, bytes):
        return s.decode("utf-8", errors)
    try:
        return str(s)
    except Exception as exc:
        return f"<Unrepresentable {type(s)!r}: {exc!r}>"


def safe_repr(o: Any, errors: str = "replace") -> str:
    """``repr(o)``, never raising."""
    try:
        return repr(o)
    except Exception:
        return safe_str(o, errors)


class KombuError(Exception):
    """Common base of kombu's errors."""


class OperationalError(KombuError):
    """Recoverable message transport connection error."""


class SerializationError(KombuError):
    """Failed to serialize or deserialize a message body."""


class EncodeError(SerializationError):
    """Cannot encode an object."""


class DecodeError(SerializationError):
    """Cannot decode an object."""


class ContentDisallowed(SerializationError):
    """The content type is not allowed (accept_content)."""


class NotBoundError(KombuError):
    """Trying to call channel dependent method on unbound entity."""


class MessageStateError(KombuError):
    """The message has already been acknowledged."""


class LimitExceeded(KombuError):
    """Limit exceeded."""


class ConnectionLimitExceeded(LimitExceeded):
    """Maximum number of simultaneous connections exceeded."""


class ChannelLimitExceeded(LimitExceeded):
    """Maximum number of simultaneous channels exceeded."""


class VersionMismatch(KombuError):
    """Library dependency version mismatch."""


class InconsistencyError(ConnectionError):
    """Data or environment inconsistency."""


class HttpError(Exception):
    """HTTP client error."""


def _namespace(name: str, names: dict[str, Any]) -> types.ModuleType:
    module = types.ModuleType(name, f"pgtasks.compat: kombu's {name!r}")
    for key, value in names.items():
        setattr(module, key, value)
    return module


def submodules() -> dict[str, types.ModuleType]:
    """kombu's utility submodules and ``kombu.exceptions`` as module objects."""
    exceptions: dict[str, type[BaseException]] = {
        cls.__name__: cls
        for cls in (
            KombuError,
            OperationalError,
            SerializationError,
            EncodeError,
            DecodeError,
            ContentDisallowed,
            NotBoundError,
            MessageStateError,
            LimitExceeded,
            ConnectionLimitExceeded,
            ChannelLimitExceeded,
            VersionMismatch,
            InconsistencyError,
            HttpError,
        )
    }
    exceptions["ConnectionError"] = ConnectionError
    return {
        "kombu.utils.json": _namespace(
            "kombu.utils.json",
            {"dumps": dumps, "loads": loads, "register_type": register_type, "JSONEncoder": JSONEncoder},
        ),
        "kombu.utils.encoding": _namespace(
            "kombu.utils.encoding",
            {
                "safe_repr": safe_repr,
                "safe_str": safe_str,
                "bytes_to_str": bytes_to_str,
                "str_to_bytes": str_to_bytes,
            },
        ),
        "kombu.utils.uuid": _namespace("kombu.utils.uuid", {"uuid": uuid}),
        "kombu.utils.objects": _namespace("kombu.utils.objects", {"cached_property": cached_property}),
        "kombu.exceptions": _namespace("kombu.exceptions", exceptions),
    }
