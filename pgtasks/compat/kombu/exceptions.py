"""kombu's ``kombu.exceptions``: the exception classes libraries catch or raise (pgtasks raises
none of them: it has no transport)."""

from __future__ import annotations

import builtins

__all__ = [
    "ChannelLimitExceeded",
    "ConnectionError",
    "ConnectionLimitExceeded",
    "ContentDisallowed",
    "DecodeError",
    "EncodeError",
    "HttpError",
    "InconsistencyError",
    "KombuError",
    "LimitExceeded",
    "MessageStateError",
    "NotBoundError",
    "OperationalError",
    "SerializationError",
    "SerializerNotInstalled",
    "VersionMismatch",
]

# kombu re-exports the builtin under its own module, for ``from kombu.exceptions import ...``.
ConnectionError = builtins.ConnectionError


class KombuError(Exception):
    """Common base of kombu's errors."""


class OperationalError(KombuError):
    """Recoverable message transport connection error."""


class SerializationError(KombuError):
    """Failed to serialize or deserialize a message body."""


class SerializerNotInstalled(KombuError):
    """Support for the requested serialization type is not installed."""


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


class InconsistencyError(builtins.ConnectionError):
    """Data or environment inconsistency."""


class HttpError(Exception):
    """HTTP client error."""
