"""Queue declarations and rate-limit parsing: the engine's view of flow control."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.settings import validate_queue_name
from pgtasks.sysdb.queues import check_queue_settings
from pgtasks.sysdb.records import QueueSettings

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*\.?\d*)\s*([smh]?)\s*$")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "": 1.0}


def parse_rate_limit(value: str | tuple[int, float] | None) -> tuple[int | None, float | None]:
    """``"10/m"``, ``"100/s"``, ``"5/30s"`` (Celery's forms) or ``(max, period_seconds)``."""
    if value is None:
        return None, None
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ConfigurationError(f"rate_limit tuple must be (max, period_seconds), not {value!r}")
        return int(value[0]), float(value[1])
    match = _RATE.match(str(value))
    if not match:
        raise ConfigurationError(f"rate_limit {value!r}: expected 'N/s', 'N/m', 'N/h' or 'N/<seconds>s'")
    count, amount, unit = match.groups()
    period = (float(amount) if amount else 1.0) * _UNIT[unit]
    if int(count) < 1 or period <= 0:
        raise ConfigurationError(f"rate_limit {value!r}: both numbers must be positive")
    return int(count), period


def declare_queue(
    name: str,
    concurrency: int | None = None,
    worker_concurrency: int | None = None,
    rate_limit: str | tuple[int, float] | None = None,
    priority_enabled: bool = False,
    partitioned: bool = False,
    polling_interval: float = 1.0,
    result_expires: float | timedelta | None = None,
) -> QueueSettings:
    """Settings for ``app.queue(...)``, checked when declared."""
    validate_queue_name(name)
    if isinstance(result_expires, timedelta):
        result_expires = result_expires.total_seconds()
    rate_max, period = parse_rate_limit(rate_limit)
    settings = QueueSettings(
        name=name,
        concurrency=concurrency,
        worker_concurrency=worker_concurrency,
        rate_limit_max=rate_max,
        rate_limit_period_sec=period,
        priority_enabled=priority_enabled,
        partition_queue=partitioned,
        polling_interval_sec=polling_interval,
        result_expires_sec=result_expires,
    )
    check_queue_settings(settings)
    return settings


def parse_result_expires(value: str, what: str = "result_expires") -> float | None:
    """A queue's retention as an operator types it: seconds, ``never`` (0: kept until deleted
    by hand) or ``default`` (None: the app's ``result_expires``)."""
    word = value.strip().lower()
    if word in ("default", ""):
        return None
    if word == "never":
        return 0.0
    try:
        seconds = float(word)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigurationError(
            f"{what} takes a positive number of seconds, 'never' or 'default', not {value!r}"
        )
    return seconds
