"""Queue settings storage: the columns a caller may set, their checks, and the parameters
of the ``queue_upsert`` statement."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.records import QueueSettings, QueueUpsert

# Columns of ``queues`` that settings may change (each has a set_<column> flag in queue_upsert).
# ``paused`` is not one: declaring a queue at worker start must never resume it.
SETTABLE = tuple(f.name for f in fields(QueueSettings) if f.name not in ("name", "paused"))
MAX_COUNT = 2**31 - 1  # the largest value of an integer column (concurrency, rate_limit_max)
MAX_SECONDS = 100 * 366 * 86_400  # a century: ages in epoch milliseconds stay far inside BIGINT


def check_queue_settings(settings: QueueSettings) -> None:
    """Refuse limits that make no sense, with the field's name in the message."""
    for name in ("concurrency", "worker_concurrency", "rate_limit_max"):
        value = getattr(settings, name)
        bad = isinstance(value, bool) or not isinstance(value, int)
        if value is not None and (bad or not 1 <= value <= MAX_COUNT):
            raise ConfigurationError(
                f"queue {settings.name!r}: {name} must be an integer from 1 to {MAX_COUNT:,} or None"
            )
    for name in ("rate_limit_period_sec", "polling_interval_sec"):
        value = getattr(settings, name)
        bad = isinstance(value, bool) or not isinstance(value, (int, float))
        if value is not None and (bad or not 0 < value <= MAX_SECONDS):
            raise ConfigurationError(
                f"queue {settings.name!r}: {name} must be a positive number of seconds, at most a century"
            )
    expires = settings.result_expires_sec
    bad = isinstance(expires, bool) or not isinstance(expires, (int, float))
    if expires is not None and (bad or not 0 <= expires <= MAX_SECONDS):
        raise ConfigurationError(
            f"queue {settings.name!r}: result_expires_sec must be a number of seconds from 0 to a "
            "century (0 keeps its tasks until deleted by hand) or None (the app's result_expires)"
        )
    if (settings.rate_limit_max is None) != (settings.rate_limit_period_sec is None):
        raise ConfigurationError(
            f"queue {settings.name!r}: a rate limit needs both rate_limit_max and rate_limit_period_sec"
        )


def upsert_params(params: QueueUpsert, queue_id: str, row: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parameters of the ``queue_upsert`` statement: every setting, and a ``set_<column>``
    flag per column saying whether the existing ``row`` (None: no row yet) takes it.

    The rule (docs/worker.md): an operator's write takes the columns it names and marks them
    as set by an operator; the app's declaration takes the named columns except those an
    operator set, unless the app's declared value of such a column changed since the app's
    last declaration (then the new declared value wins and the mark is dropped)."""
    changed = frozenset(SETTABLE) if params.changed is None else params.changed
    unknown = changed - set(SETTABLE)
    if unknown:
        raise ConfigurationError(f"unknown queue settings {sorted(unknown)}; known: {list(SETTABLE)}")
    values: dict[str, Any] = {c: getattr(params.settings, c) for c in SETTABLE}
    by_operator: set[str] = set() if row is None else set(json.loads(row["operator_set"] or "[]"))
    if params.declared:
        before = None if row is None or row["declared"] is None else json.loads(row["declared"])
        taken = {
            c for c in changed if c not in by_operator or (before is not None and before.get(c) != values[c])
        }
        by_operator -= taken
        declared: str | None = json.dumps(values, sort_keys=True)
    else:
        taken, declared = set(changed), None
        by_operator |= changed
    flags = {f"set_{c}": c in taken for c in SETTABLE}
    return {
        **values,
        **flags,
        "queue_id": queue_id,
        "name": params.settings.name,
        "declared": declared,
        "operator_set": json.dumps(sorted(by_operator)),
    }
