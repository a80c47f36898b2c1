"""Validation and quoting of SQL identifiers (schema, queue and channel names).

Values always travel as bound parameters; identifiers cannot, so every identifier pgtasks
puts into SQL text passes through :func:`quote_identifier` first.
"""

from __future__ import annotations

import re

from pgtasks.sysdb.errors import ConfigurationError

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_MAX_IDENTIFIER_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1; longer names are truncated silently.


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Return ``name`` if it is a safe lower-case SQL identifier, else raise ConfigurationError."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ConfigurationError(
            f"invalid {what} {name!r}: use lower-case letters, digits and underscores, "
            "starting with a letter or underscore"
        )
    if len(name.encode()) > _MAX_IDENTIFIER_BYTES:
        raise ConfigurationError(
            f"invalid {what} {name!r}: at most {_MAX_IDENTIFIER_BYTES} bytes (PostgreSQL would truncate it)"
        )
    return name


def quote_identifier(name: str, what: str = "identifier") -> str:
    """Validate ``name`` and return it double-quoted for use in SQL text."""
    return '"' + validate_identifier(name, what) + '"'
