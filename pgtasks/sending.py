"""Sending one task by name: the path shared by Task.apply_async, App.send_task and Client."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from pgtasks.engine.core import Engine
from pgtasks.engine.options import EnqueueRequest
from pgtasks.result import AsyncResult


def send_by_name(
    engine: Engine,
    name: str,
    args: Sequence[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    *,
    task_id: str | None = None,
    queue: str | None = None,
    countdown: float | None = None,
    eta: dt.datetime | None = None,
    priority: int = 0,
    deduplication_id: str | None = None,
    partition_key: str | None = None,
    max_recovery_attempts: int | None = None,
    expires: float | dt.datetime | None = None,
    on_duplicate: str = "raise",
    conn: Any = None,
) -> AsyncResult:
    """Insert one task by name and return its handle (see ``Task.apply_async``)."""
    request = EnqueueRequest(
        name=name,
        args=tuple(args or ()),
        kwargs=dict(kwargs or {}),
        task_id=task_id,
        queue=queue,
        countdown=countdown,
        eta=eta,
        priority=priority,
        deduplication_id=deduplication_id,
        partition_key=partition_key,
        max_recovery_attempts=max_recovery_attempts,
        expires=expires,
    )
    [sent] = engine.enqueue([request], conn=conn, on_duplicate=on_duplicate)
    return AsyncResult(sent, engine)
