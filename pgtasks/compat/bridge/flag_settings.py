"""Celery's on/off settings that pgtasks acts on, checked where they are read and, all at
once, as a worker starts.

Celery reads such a setting set in Python by its truth value: ``task_track_started = 'false'``
(an environment variable passed on as it is) turns tracking on, and so does ``'maybe'``.
pgtasks takes the values whose meaning is the same read either way: True, False, None (the
default), 0, 1, ``''`` and the text of an "on" word (``'true'``, ``'yes'``, ``'on'``, ``'1'``).
Any other value, the "off" words first of all (``'false'``, ``'no'``, ``'off'``, ``'0'``,
which Celery runs as on), is refused by the setting's name and value (ConfigurationError).
On the command line (``celery worker -- task_track_started=false``) the text is converted, as
Celery converts it (loaders/base.py).
"""

from __future__ import annotations

from typing import Any

from pgtasks.engine.errors import ConfigurationError

# The on/off settings pgtasks reads (the others, such as task_acks_late, change nothing here).
FLAG_SETTINGS = (
    "enable_utc",
    "task_always_eager",
    "task_eager_propagates",
    "task_ignore_result",
    "task_store_eager_result",
    "task_store_errors_even_if_ignored",
    "task_track_started",
    "broker_connection_retry_on_startup",
    "worker_disable_prefetch",
)
_ON = frozenset({"true", "yes", "on", "1", "y", "t"})
_OFF = frozenset({"false", "no", "off", "0", "n", "f"})


def flag(setting: str, value: Any) -> bool:
    """``value`` of the on/off ``setting`` as Celery reads it (None: False), or
    ConfigurationError when its meaning is not what Celery would make of it."""
    if value is True or value is False:
        return value
    if value is None or value == "":
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _ON:
        return True
    if isinstance(value, str) and value.strip().lower() in _OFF:
        raise ConfigurationError(
            f"{setting}={value!r}: Celery reads any non-empty text as on; give False (or True)"
        )
    raise ConfigurationError(f"{setting} must be True or False, not {value!r}")


def check_flags(conf: Any) -> None:
    """Check every on/off setting pgtasks reads (a worker, as it starts)."""
    for setting in FLAG_SETTINGS:
        flag(setting, conf.get(setting))
