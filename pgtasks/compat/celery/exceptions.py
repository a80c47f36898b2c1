"""``celery.exceptions``: Celery's exception classes, with Celery's names and bases.

The time-limit exceptions are pgtasks' own (the prefork pool raises them), so
``except SoftTimeLimitExceeded`` works whichever name an application imports.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

# Celery's name for kombu's class (the same class): what a send raises when it cannot reach
# the database (bridge/send_errors.py), as Celery's Calling guide catches it.
from pgtasks.compat.kombu.exceptions import OperationalError
from pgtasks.engine import errors as engine_errors
from pgtasks.engine.errors import SoftTimeLimitExceeded, TimeLimitExceeded, WorkerLostError

__all__ = [
    "AlreadyRegistered",
    "AlwaysEagerIgnored",
    "BackendError",
    "BackendGetMetaError",
    "BackendStoreError",
    "CDeprecationWarning",
    "CPendingDeprecationWarning",
    "CeleryCommandException",
    "CeleryError",
    "CeleryWarning",
    "ChordError",
    "DuplicateNodenameWarning",
    "DuplicateTaskNameWarning",
    "FixupWarning",
    "Ignore",
    "ImproperlyConfigured",
    "IncompleteStream",
    "InvalidTaskError",
    "MaxRetriesExceededError",
    "NotConfigured",
    "NotRegistered",
    "OperationalError",
    "QueueNotFound",
    "Reject",
    "Retry",
    "SecurityError",
    "SecurityWarning",
    "SoftTimeLimitExceeded",
    "TaskError",
    "TaskPredicate",
    "TaskRevokedError",
    "Terminated",
    "TimeLimitExceeded",
    "TimeoutError",
    "WorkerLostError",
    "WorkerShutdown",
    "WorkerTerminate",
    "reraise",
]


class CeleryWarning(UserWarning):
    """Base class for Celery's warnings."""


class AlwaysEagerIgnored(CeleryWarning):
    """send_task ignores task_always_eager."""


class DuplicateNodenameWarning(CeleryWarning):
    """Multiple workers are using the same nodename."""


class DuplicateTaskNameWarning(CeleryWarning):
    """Two tasks were registered under the same name."""


class FixupWarning(CeleryWarning):
    """A fixup (Django) could not be applied."""


class NotConfigured(CeleryWarning):
    """Celery has not been configured."""


class SecurityWarning(CeleryWarning):
    """Potential security issue."""


class CPendingDeprecationWarning(PendingDeprecationWarning):
    """Pending deprecation."""


class CDeprecationWarning(DeprecationWarning):
    """Deprecation."""


class CeleryError(Exception):
    """Base class for Celery's errors."""


class ImproperlyConfigured(CeleryError):
    """Celery is configured wrongly."""


class SecurityError(CeleryError):
    """A security problem."""


class TaskPredicate(CeleryError):
    """Base class for exceptions that tell the worker what to do with a task."""


class Retry(TaskPredicate):
    """The task is to be retried: raised by ``Task.retry()``.

    ``exc`` is the reason, ``when`` the countdown in seconds or an ETA datetime.
    """

    def __init__(
        self,
        message: str | None = None,
        exc: BaseException | str | None = None,
        when: float | dt.datetime | None = None,
        is_eager: bool = False,
        sig: Any = None,
        **kwargs: Any,
    ) -> None:
        self.message = message
        self.exc: Any = exc
        self.excs = str(exc) if isinstance(exc, str) else (repr(exc) if exc is not None else None)
        self.when = when
        self.is_eager = is_eager
        self.sig = sig
        super().__init__(self, exc, when, **kwargs)

    def humanize(self) -> str:
        if isinstance(self.when, (int, float)):
            return f"in {self.when}s"
        return f"at {self.when}"

    def __str__(self) -> str:
        if self.message:
            return self.message
        if self.excs:
            return f"Retry {self.humanize()}: {self.excs}"
        return f"Retry {self.humanize()}"

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, (self.message, self.excs, self.when)


RetryTaskError = Retry


class Ignore(TaskPredicate):
    """The task is to be ignored: no result state is recorded."""


class Replaced(Ignore):
    """What ``Task.replace`` raises in a worker (an :class:`Ignore`, as in Celery): the task
    was handed over to its replacement, which will write its outcome."""


class Reject(TaskPredicate):
    """The task is rejected (``requeue=True``: sent back to its queue)."""

    def __init__(self, reason: Any = None, requeue: bool = False) -> None:
        self.reason = reason
        self.requeue = requeue
        super().__init__(reason, requeue)

    def __repr__(self) -> str:
        return f"reject requeue={self.requeue}: {self.reason}"


class WorkerTerminate(SystemExit):
    """Signals that the worker should terminate immediately."""


SystemTerminate = WorkerTerminate


class WorkerShutdown(SystemExit):
    """Signals that the worker should perform a warm shutdown."""


class TaskError(CeleryError):
    """Task related errors."""


class QueueNotFound(KeyError, TaskError):
    """A task was routed to a queue that is not declared."""


class IncompleteStream(TaskError):
    """Found the end of a stream of data, but the data isn't complete."""


class NotRegistered(engine_errors.TaskNotRegistered, TaskError):
    """The task is not registered (a KeyError; pgtasks' own ``TaskNotRegistered`` too)."""

    def __repr__(self) -> str:
        return f"<NotRegistered: {self.args[0] if self.args else ''!r}>"


class AlreadyRegistered(TaskError):
    """The task is already registered."""


class TimeoutError(TaskError):
    """The operation timed out (``AsyncResult.get(timeout=...)``)."""


class MaxRetriesExceededError(TaskError):
    """The task's maximum number of retries was exceeded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.task_args = kwargs.pop("task_args", [])
        self.task_kwargs = kwargs.pop("task_kwargs", {})
        super().__init__(*args, **kwargs)


class TaskRevokedError(TaskError):
    """The task has been revoked, so no result is available."""


class InvalidTaskError(TaskError):
    """The task has invalid data or is not properly constructed."""


class ChordError(TaskError):
    """A task part of the chord raised an exception."""


class BackendError(CeleryError):
    """An issue writing or reading to/from the result store."""


class BackendGetMetaError(BackendError):
    """An issue reading from the result store."""


class BackendStoreError(BackendError):
    """An issue writing to the result store."""


class Terminated(Exception):
    """The task was terminated (revoke with ``terminate=True``)."""


class CeleryCommandException(ImproperlyConfigured):
    """A command line error."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def reraise(tp: type[BaseException], value: BaseException, tb: Any = None) -> None:
    """Raise ``value`` with traceback ``tb`` (Celery's helper)."""
    if value.__traceback__ is not tb:
        raise value.with_traceback(tb)
    raise value
