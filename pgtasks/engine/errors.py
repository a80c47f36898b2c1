"""Exceptions of the durable engine, re-exported by :mod:`pgtasks`."""

from __future__ import annotations

from typing import Any

from pgtasks.sysdb.errors import ConfigurationError, DatabaseUnavailable, PgtasksError

__all__ = [
    "ConfigurationError",
    "DatabaseUnavailable",
    "DuplicateTaskError",
    "MaxRecoveryAttemptsExceeded",
    "NonDeterminismError",
    "PayloadTooLarge",
    "PgtasksError",
    "RetryRequested",
    "SerializationError",
    "SoftTimeLimitExceeded",
    "TaskAbandoned",
    "TaskCancelled",
    "TaskError",
    "TaskExpired",
    "TaskNotRegistered",
    "TaskReleased",
    "TaskSuspended",
    "TaskTimeoutError",
    "TimeLimitExceeded",
    "WorkerLostError",
]


class SerializationError(PgtasksError, TypeError):
    """A value cannot be serialized, or a stored value cannot be read back."""


class PayloadTooLarge(SerializationError):
    """A task's serialized arguments are larger than the ``max_payload_bytes`` setting.

    ``size`` and ``limit`` are in bytes (UTF-8 of the stored text)."""

    def __init__(self, message: str, size: int = 0, limit: int = 0) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class TaskNotRegistered(PgtasksError, KeyError):
    """No task of that name is registered in this process."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "task not registered"


class DuplicateTaskError(PgtasksError):
    """Another unfinished task on the queue holds the same deduplication id."""

    def __init__(self, message: str, existing_task_id: str | None = None) -> None:
        super().__init__(message)
        self.existing_task_id = existing_task_id


class TaskError(PgtasksError):
    """A task failed with an exception type that pgtasks does not rebuild.

    ``type_name`` is the original exception's qualified type name, ``message`` its text and
    ``remote_traceback`` the traceback recorded by the worker.
    """

    def __init__(self, type_name: str, message: str, remote_traceback: str = "") -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
        self.remote_traceback = remote_traceback


class TaskCancelled(PgtasksError):
    """The task was cancelled before it finished."""


class TaskExpired(TaskCancelled):
    """The task was not started before its ``expires`` time, so it never ran."""


class SoftTimeLimitExceeded(PgtasksError):
    """Raised inside a task when it runs past its soft time limit (prefork pool)."""


class TimeLimitExceeded(PgtasksError):
    """The task ran past its hard time limit; its worker process was killed and replaced."""


class WorkerLostError(PgtasksError):
    """The process running the task died (it will be run again, up to max_recovery_attempts)."""


class MaxRecoveryAttemptsExceeded(PgtasksError):
    """The task was started more times than ``max_recovery_attempts`` allows (dead letter)."""


class NonDeterminismError(PgtasksError):
    """On re-execution a task called a different step than the one recorded at that position."""


class TaskTimeoutError(PgtasksError, TimeoutError):
    """Waiting for a task's result took longer than the timeout."""


class RetryRequested(PgtasksError):
    """Raised by a task body to run the task again, under the same id and from scratch, after
    ``countdown`` seconds (0: at once). ``reason`` (an exception) is stored meanwhile as the
    task's error, and ``retries`` grows by one. ``args``/``kwargs`` replace the task's
    arguments for the next run; ``queue`` and ``priority`` (None: keep them) move it to another
    queue or priority for it. Celery's ``self.retry()`` raises it."""

    def __init__(
        self,
        message: str = "",
        *,
        countdown: float = 0.0,
        reason: BaseException | None = None,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        queue: str | None = None,
        priority: int | None = None,
    ) -> None:
        if (
            isinstance(countdown, bool)
            or not isinstance(countdown, (int, float))
            or not 0 <= countdown < 10**9
        ):
            raise ConfigurationError(
                f"retry countdown must be a number of seconds from 0 to 10**9 (31 years), not {countdown!r}"
            )
        super().__init__(message or f"Retry in {countdown:g}s" + (f": {reason!r}" if reason else ""))
        self.countdown = float(countdown)
        self.reason = reason
        # New arguments for the next run (None: keep them), as Celery's retry(args=, kwargs=).
        self.new_args = None if args is None else tuple(args)
        self.new_kwargs = None if kwargs is None else dict(kwargs)
        self.queue = queue  # checked where the retry is recorded (a refused one ends the task)
        self.priority = priority


class TaskAbandoned(BaseException):
    """Raised at a step boundary when this executor no longer owns the task (cancelled, or
    taken over by another executor). A BaseException so that ``except Exception`` in a task
    body cannot swallow it; the executor then writes nothing for the task."""


class TaskReleased(BaseException):
    """Raised at a step boundary when the database stayed unreachable for a whole lease:
    the executor gives the task back (ENQUEUED) once it can, and it runs again from its
    last checkpoint. A BaseException for the same reason as TaskAbandoned."""


class ChordError(PgtasksError):
    """A chord's body did not run: one of its header tasks failed."""


class TaskSuspended(BaseException):
    """Raised inside a task that has just been suspended (it sleeps, or waits for a message
    or an event, longer than the worker should hold its slot): its row waits as DELAYED
    with its checkpoints, and the worker writes nothing more for this run. A BaseException
    so that ``except Exception`` in a task body cannot swallow it."""
