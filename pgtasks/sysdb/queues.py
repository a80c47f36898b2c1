"""Shared pieces of queue settings storage: the columns a caller may set, and their checks."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.records import QueueSettings

# Columns of ``queues`` that settings may change; the SQL text is built from these names only.
SETTABLE = tuple(f.name for f in fields(QueueSettings) if f.name != "name")


def check_queue_settings(settings: QueueSettings) -> None:
    """Refuse limits that make no sense, with the field's name in the message."""
    for name in ("concurrency", "worker_concurrency", "rate_limit_max"):
        value = getattr(settings, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigurationError(f"queue {settings.name!r}: {name} must be an integer >= 1 or None")
    for name in ("rate_limit_period_sec", "polling_interval_sec"):
        value = getattr(settings, name)
        bad = isinstance(value, bool) or not isinstance(value, (int, float))
        if value is not None and (bad or not math.isfinite(value) or value <= 0):
            raise ConfigurationError(f"queue {settings.name!r}: {name} must be a positive number of seconds")
    if (settings.rate_limit_max is None) != (settings.rate_limit_period_sec is None):
        raise ConfigurationError(
            f"queue {settings.name!r}: a rate limit needs both rate_limit_max and rate_limit_period_sec"
        )


def upsert_sql(table: str, placeholder: str, changed: frozenset[str], now_ms: str) -> str:
    """INSERT ... ON CONFLICT (name) DO UPDATE of the ``changed`` columns only."""
    unknown = changed - set(SETTABLE)
    if unknown:
        raise ConfigurationError(f"unknown queue settings {sorted(unknown)}; known: {list(SETTABLE)}")
    columns = ["queue_id", "name", *SETTABLE, "created_at", "updated_at"]
    values = [placeholder.format(c) for c in ["queue_id", "name", *SETTABLE]] + [now_ms, now_ms]
    updates = [f"{c} = excluded.{c}" for c in SETTABLE if c in changed] + [f"updated_at = {now_ms}"]
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(values)}) "
        f"ON CONFLICT (name) DO UPDATE SET {', '.join(updates)}"
    )


def settings_params(settings: QueueSettings, queue_id: str) -> dict[str, Any]:
    params: dict[str, Any] = {c: getattr(settings, c) for c in SETTABLE}
    params.update(queue_id=queue_id, name=settings.name)
    return params
