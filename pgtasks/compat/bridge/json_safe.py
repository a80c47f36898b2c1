"""Settings as Celery's worker answers ``inspect conf``: every value JSON carries."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from pgtasks.compat.celery.utils.saferepr import saferepr


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON carries it, as Celery's worker answers ``inspect conf``: times in
    ISO 8601, a timedelta as text, collections as lists (nested past eight levels, or
    holding themselves, as their repr), anything else as its repr."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no inf or nan
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 8:
        return saferepr(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [json_safe(v, depth + 1) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    return saferepr(value)
