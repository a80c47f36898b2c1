"""Celery's on/off settings that pgtasks acts on, checked where they are read and, all at
once, as a worker starts.

Celery reads such a setting set in Python by its truth value: ``task_track_started = 'false'``
(an environment variable passed on as it is) turns tracking on, and so does ``'maybe'``.
pgtasks takes the values whose meaning is the same read either way: True, False, None (the
default), 0, 1, ``''`` and the text of an "on" word (``'true'``, ``'yes'``, ``'on'``, ``'1'``).
The "off" words (``'false'``, ``'no'``, ``'off'``, ``'0'``) are read as Celery reads them, as
on, with a warning naming the setting (once per value): a project that runs on Celery with
such a value keeps running the same way. Any other value is refused by the setting's name and
value (ConfigurationError).
On the command line (``celery worker -- task_track_started=false``) the text is converted, as
Celery converts it (loaders/base.py).
"""

from __future__ import annotations

import logging
from typing import Any

from pgtasks.engine.errors import ConfigurationError

log = logging.getLogger("pgtasks.celery")

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
    "task_inherit_parent_priority",
    "worker_hijack_root_logger",
    "worker_redirect_stdouts",
)
_ON = frozenset({"true", "yes", "on", "1", "y", "t"})
_OFF = frozenset({"false", "no", "off", "0", "n", "f"})
_warned: set[tuple[str, str]] = set()


def flag(setting: str, value: Any) -> bool:
    """``value`` of the on/off ``setting`` as Celery reads it (None: False; an "off" word: on,
    with a warning), or ConfigurationError for a value with no meaning as a switch."""
    if value is True or value is False:
        return value
    if value is None or value == "":
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _ON:
        return True
    if isinstance(value, str) and value.strip().lower() in _OFF:
        if (setting, value) not in _warned:
            _warned.add((setting, value))
            log.warning(
                "%s=%r is on: Celery reads any non-empty text as on, and so does pgtasks; give False "
                "to turn it off",
                setting,
                value,
            )
        return True
    raise ConfigurationError(f"{setting} must be True or False, not {value!r}")


def check_flags(conf: Any) -> None:
    """Check every on/off setting pgtasks reads (a worker, as it starts)."""
    for setting in FLAG_SETTINGS:
        flag(setting, conf.get(setting))
