"""Errors raised by the system database layer."""

from __future__ import annotations

from typing import Any


class PgtasksError(Exception):
    """Base class of every error pgtasks raises."""


class ConfigurationError(PgtasksError, ValueError):
    """A setting pgtasks cannot use (database URL, schema name, option value)."""


class NotInChord(ConfigurationError):
    """A task added to the chord of a running task (``add_to_chord``) that counts towards no
    chord: nothing was written."""


class DatabaseUnavailable(PgtasksError):
    """The system database could not be reached or answered with a connection error."""


class DatabaseBusy(DatabaseUnavailable):
    """The database, reached over a live session, refused a statement for now: a lock held
    by another session (``lock_timeout``), ``statement_timeout``, a serialization failure or
    a deadlock. Retried like an outage; unlike an outage, the lease is renewed meanwhile (the
    heartbeat has a session of its own), so the task stays this worker's."""


class DatabaseReadOnly(DatabaseUnavailable):
    """The database answered but accepts no writes (a standby, a read-only role, or
    ``default_transaction_read_only``). Retried like an outage: a failover may promote it."""


class DuplicatesRefused(PgtasksError):
    """An all-or-nothing enqueue found a deduplication id already held: nothing was written.
    ``results`` holds one result per task (those with ``duplicate_of`` set were refused)."""

    def __init__(self, results: list[Any]) -> None:
        super().__init__("a deduplication id of the batch is held by another task")
        self.results = results
