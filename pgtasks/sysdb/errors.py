"""Errors raised by the system database layer."""

from __future__ import annotations


class PgtasksError(Exception):
    """Base class of every error pgtasks raises."""


class ConfigurationError(PgtasksError, ValueError):
    """A setting pgtasks cannot use (database URL, schema name, option value)."""


class DatabaseUnavailable(PgtasksError):
    """The system database could not be reached or answered with a connection error."""
