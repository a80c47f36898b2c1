"""billiard's ``billiard.exceptions``: the time limit and lost-worker errors that tasks and
error handlers import from billiard (Celery's ``celery.exceptions`` re-exports them). They are
pgtasks' own classes, so ``except billiard.exceptions.SoftTimeLimitExceeded`` catches what a
pgtasks worker raises and ``AsyncResult.get()`` raises the class the application imported."""

from __future__ import annotations

from multiprocessing import AuthenticationError, BufferTooShort, ProcessError, TimeoutError

from pgtasks.compat.celery.exceptions import Terminated
from pgtasks.engine.errors import SoftTimeLimitExceeded, TimeLimitExceeded, WorkerLostError

__all__ = [
    "AuthenticationError",
    "BufferTooShort",
    "CoroStop",
    "ProcessError",
    "RestartFreqExceeded",
    "SoftTimeLimitExceeded",
    "Terminated",
    "TimeLimitExceeded",
    "TimeoutError",
    "WorkerLostError",
]


class RestartFreqExceeded(Exception):
    """Pool processes restarted too often (billiard's pool; pgtasks' prefork pool replaces a
    child without this limit)."""


class CoroStop(Exception):
    """A coroutine of billiard's pool ended (billiard's internals; never raised here)."""
