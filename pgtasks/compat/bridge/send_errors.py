"""What a send raises when the database cannot be reached: kombu's ``OperationalError``, as
Celery does when its broker is down (the Calling guide's ``except add.OperationalError``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pgtasks.compat.kombu.exceptions import OperationalError
from pgtasks.sysdb.errors import DatabaseUnavailable


class SendFailed(OperationalError, DatabaseUnavailable):
    """A send that could not reach the database: kombu's ``OperationalError`` (Celery's
    ``celery.exceptions.OperationalError``, ``Task.OperationalError``) and pgtasks'
    ``DatabaseUnavailable`` it comes from (its message, its cause)."""


@contextlib.contextmanager
def sending() -> Iterator[None]:
    """Turn a ``DatabaseUnavailable`` raised inside into :class:`SendFailed`."""
    try:
        yield
    except DatabaseUnavailable as exc:
        if isinstance(exc, OperationalError):
            raise
        raise SendFailed(str(exc)) from exc
