"""Checks of what a reader passes to look a task up or to wait for it: the task id, the
timeout and the poll interval. Each refuses a value the database or a clock cannot use with an
error that names it, before any query: an id no task can have (not a string, a NUL
character, a lone surrogate) would otherwise reach the driver raw, and a NaN timeout never
expires (every comparison with it is false)."""

from __future__ import annotations

import math
import numbers

from pgtasks.engine.errors import ConfigurationError


def checked_task_id(task_id: object) -> str:
    """``task_id`` when a task can have it. TypeError for what is not a string; a
    ConfigurationError (a ValueError) for a string no database column holds: PostgreSQL
    refuses NUL in text and a lone surrogate is not encodable as UTF-8. The same ids are
    refused at send (``task_id=``), so no task has them."""
    if not isinstance(task_id, str):
        raise TypeError(f"a task id must be a string, not {type(task_id).__name__} ({task_id!r})")
    return storable_text(task_id, "task id")


def storable_text(value: str, what: str) -> str:
    """``value`` when a text column can hold it (compare with it); else a ConfigurationError
    naming ``what``: PostgreSQL refuses NUL in text, and a lone surrogate is not UTF-8."""
    if "\x00" in value:
        raise ConfigurationError(f"{what} {value!r} contains a NUL character")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigurationError(f"{what} {value!r} is not valid Unicode (a lone surrogate)") from None
    return value


def wait_timeout(timeout: object, what: str = "timeout", text: bool = False) -> float | None:
    """The ``timeout`` of a wait in seconds, or None (no limit). TypeError for what is not a
    number (with ``text``, a string of one is read as Celery reads it); ConfigurationError (a
    ValueError) for NaN and minus infinity. Infinity waits without limit; a negative number
    has expired already (one look, then the timeout), as in Celery."""
    if timeout is None:
        return None
    seconds = _seconds(timeout, what, "a number of seconds or None", text)
    if math.isnan(seconds) or seconds == -math.inf:
        raise ConfigurationError(f"{what} must be a number of seconds or None, not {timeout!r}")
    return seconds


def poll_interval(interval: object, what: str = "interval") -> float:
    """The pause between two polls: a finite number of seconds >= 0 (TypeError for what is
    not a number, ConfigurationError for the rest)."""
    seconds = _seconds(interval, what, "a number of seconds", text=False)
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigurationError(f"{what} must be a finite number of seconds >= 0, not {interval!r}")
    return seconds


def _seconds(value: object, what: str, expected: str, text: bool) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, int):  # bool too, as float() reads it (Celery's waits take True)
        return float(value) if abs(value) < 2**1000 else (math.inf if value > 0 else -math.inf)
    if isinstance(value, numbers.Real):  # numpy's scalars, Fraction (not Decimal: Celery refuses it)
        return float(value)
    if text and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ConfigurationError(f"{what} must be {expected}, not {value!r}") from None
    raise TypeError(f"{what} must be {expected}, not {type(value).__name__} ({value!r})")
