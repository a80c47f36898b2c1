"""pgtasks: a Celery-compatible task queue on PostgreSQL alone.

Every task is a durable workflow row, every ``@app.step`` inside it a checkpoint; work
interrupted by a crash resumes from its last completed step.
"""

from __future__ import annotations

from pgtasks.app import App
from pgtasks.client import Client
from pgtasks.engine.context import current_task
from pgtasks.engine.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    DuplicateTaskError,
    MaxRecoveryAttemptsExceeded,
    NonDeterminismError,
    PayloadTooLarge,
    PgtasksError,
    RetryRequested,
    SerializationError,
    SoftTimeLimitExceeded,
    TaskCancelled,
    TaskError,
    TaskExpired,
    TaskNotRegistered,
    TaskTimeoutError,
    TimeLimitExceeded,
)
from pgtasks.management import TaskInfo
from pgtasks.result import AsyncResult
from pgtasks.sysdb.records import Status
from pgtasks.task import Task
from pgtasks.waiting import (
    close_stream,
    close_stream_async,
    get_event,
    get_event_async,
    recv,
    recv_async,
    send,
    send_async,
    set_event,
    set_event_async,
    sleep,
    sleep_async,
    write_stream,
    write_stream_async,
)

__version__ = "0.1.0"

__all__ = [
    "App",
    "AsyncResult",
    "Client",
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
    "Status",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskExpired",
    "TaskInfo",
    "TaskNotRegistered",
    "TaskTimeoutError",
    "TimeLimitExceeded",
    "close_stream",
    "close_stream_async",
    "current_task",
    "get_event",
    "get_event_async",
    "recv",
    "recv_async",
    "send",
    "send_async",
    "set_event",
    "set_event_async",
    "sleep",
    "sleep_async",
    "write_stream",
    "write_stream_async",
]
