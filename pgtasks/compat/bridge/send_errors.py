"""What a send raises when the database cannot be reached: kombu's ``OperationalError``, as
Celery does when its broker is down (the Calling guide's ``except add.OperationalError``); and
when an argument cannot be encoded: kombu's ``EncodeError``, as Celery's producer raises."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pgtasks.compat.kombu.exceptions import EncodeError, OperationalError
from pgtasks.engine.errors import PayloadTooLarge
from pgtasks.engine.errors import SerializationError as EngineSerializationError
from pgtasks.sysdb.errors import DatabaseUnavailable


class SendFailed(OperationalError, DatabaseUnavailable):
    """A send that could not reach the database: kombu's ``OperationalError`` (Celery's
    ``celery.exceptions.OperationalError``, ``Task.OperationalError``) and pgtasks'
    ``DatabaseUnavailable`` it comes from (its message, its cause)."""


class SendEncodeError(EncodeError, EngineSerializationError):
    """Arguments a send could not encode: kombu's ``EncodeError`` (what Celery raises) and
    pgtasks' ``SerializationError`` it comes from (its message naming the argument)."""


@contextlib.contextmanager
def sending() -> Iterator[None]:
    """Turn a ``DatabaseUnavailable`` raised inside into :class:`SendFailed`, and pgtasks'
    ``SerializationError`` into :class:`SendEncodeError` (``PayloadTooLarge`` stays itself:
    kombu has no such error)."""
    try:
        yield
    except DatabaseUnavailable as exc:
        if isinstance(exc, OperationalError):
            raise
        raise SendFailed(str(exc)) from exc
    except EngineSerializationError as exc:
        if isinstance(exc, (EncodeError, PayloadTooLarge)):
            raise
        raise SendEncodeError(str(exc)) from exc
