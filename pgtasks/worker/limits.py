"""Which time limits apply to a task: those given when it was sent (stored in the row's
``meta``), else those of its task definition, else the worker's (``--time-limit``,
``--soft-time-limit``). Limits are enforced by the prefork pool, whose children can be
interrupted (soft limit: ``SoftTimeLimitExceeded`` raised in the task) and killed (hard)."""

from __future__ import annotations

import json
import math
from typing import Any

from pgtasks.engine.core import Engine
from pgtasks.sysdb.records import TaskRecord

LIMITS = ("time_limit", "soft_time_limit")


def time_limits(
    engine: Engine, record: TaskRecord, default_hard: float | None, default_soft: float | None
) -> tuple[float | None, float | None]:
    """(hard, soft) in seconds for ``record``; None where no limit applies."""
    sent = _from_meta(record.meta)
    registry = engine.registry
    declared: dict[str, Any] = registry.get(record.name).options if record.name in registry else {}
    found = []
    for name, default in zip(LIMITS, (default_hard, default_soft), strict=True):
        value = sent.get(name)
        if value is None:
            value = declared.get(name)
        found.append(_seconds(value) if value is not None else default)
    return found[0], found[1]


def _from_meta(text: str | None) -> dict[str, Any]:
    if not text or "time_limit" not in text:  # most tasks (a Celery task's origin alone): no JSON to read
        return {}
    try:
        meta = json.loads(text)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _seconds(value: Any) -> float | None:
    """A positive, finite number of seconds, or None (a malformed value sets no limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None
