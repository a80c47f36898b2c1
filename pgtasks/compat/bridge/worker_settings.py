"""A Celery app's worker settings as ``pgtasks worker`` options, each value checked and,
when it is wrong, refused by the setting's name and value (ConfigurationError: one line,
exit status 2) before the worker starts.

Celery reads these where its worker or pool needs them, and a wrong value either fails deep
in the pool with a traceback or is replaced by a default: ``worker_concurrency = 'x'`` warns
and falls back to the CPU count. pgtasks refuses such a value instead, and takes the forms
Celery takes: ``worker_concurrency`` as text of a number (``'4'``) or ``'auto'``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Collection
from typing import Any

from pgtasks.compat.bridge.configuration import unused_result_serializer
from pgtasks.compat.bridge.flag_settings import check_flags
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.zones import load_zone
from pgtasks.worker.pools import POOLS, RECYCLED_POOLS, TIME_LIMITED_POOLS

# Celery's green-thread pools: run on threads, with a warning (as -P eventlet).
GREEN_POOLS = ("eventlet", "gevent")
AUTO = "auto"

# option of ``pgtasks worker`` <- setting, checker, the pools that use it
_LIMITS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("time_limit", "task_time_limit", "seconds", TIME_LIMITED_POOLS),
    ("soft_time_limit", "task_soft_time_limit", "seconds", TIME_LIMITED_POOLS),
    ("max_tasks_per_child", "worker_max_tasks_per_child", "count", RECYCLED_POOLS),
    ("max_memory_per_child", "worker_max_memory_per_child", "count", RECYCLED_POOLS),
)


def read_worker_settings(conf: Any, args: argparse.Namespace, given: Collection[str]) -> None:
    """Put the app's ``worker_pool``, ``worker_concurrency``, limits and
    ``worker_soft_shutdown_timeout`` (the shutdown grace) into ``args``, except the options
    the command line ``given`` names (they win, as in Celery); check
    ``timezone``, which the worker's schedules and ETAs use, and the on/off settings pgtasks
    reads (flag_settings.py)."""
    pool = conf.get("worker_pool")
    if "pool" not in given and pool is not None:
        args.pool = pool_setting(pool)
        if pool in GREEN_POOLS:
            print(
                f"pgtasks: warning: worker_pool {pool!r}: green threads are not supported; using threads",
                file=sys.stderr,
            )
    if "concurrency" not in given:
        concurrency = concurrency_setting(conf.get("worker_concurrency"))
        if concurrency is not None:
            args.concurrency = concurrency
    for name, setting, kind, pools in _LIMITS:
        value = conf.get(setting)
        if value == 0 and not isinstance(value, bool):  # Celery reads a falsy limit as none
            value = None
        if getattr(args, name) is None and value is not None and args.pool in pools:
            check = seconds_setting if kind == "seconds" else count_setting
            setattr(args, name, check(setting, value))
    grace = conf.get("worker_soft_shutdown_timeout")
    if getattr(args, "shutdown_grace", None) is None and grace:  # Celery's 0: off, the default wait
        # Celery waits this long for running tasks at a cold shutdown, which is what a Kubernetes
        # deployment sets it for: here every stop waits for them, within this grace period.
        args.shutdown_grace = seconds_setting("worker_soft_shutdown_timeout", grace)
    unused = unused_result_serializer(conf)
    if unused is not None:
        print(f"pgtasks: warning: {unused}", file=sys.stderr)
    zone = conf.get("timezone")
    if zone is not None:
        load_zone(str(zone))  # a tzinfo too, as Celery takes it: its name (ZoneInfo's key)
    check_flags(conf)  # read later, in the worker, by the tasks it runs and sends


def pool_setting(value: Any) -> str:
    """``worker_pool``: one of :data:`POOLS`, or a green pool (threads); a ``celery.concurrency``
    class path's last part is not understood and is refused like any other name."""
    name = value if isinstance(value, str) else None
    if name == "processes":  # Celery's alias of prefork
        return "prefork"
    if name in GREEN_POOLS:
        return "threads"
    if name not in POOLS:
        raise ConfigurationError(
            f"worker_pool {value!r} is not a pool; choose one of {', '.join(POOLS)} "
            f"({' and '.join(GREEN_POOLS)} run on threads)"
        )
    return name


def concurrency_setting(value: Any) -> int | None:
    """``worker_concurrency``: a whole number >= 1 or its text (``'4'``, as Celery converts it);
    None, 0 or ``'auto'``: the default (one per CPU)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == AUTO):
        return None
    number = _whole(value)
    if number == 0:
        return None
    if number is None or number < 1:
        raise ConfigurationError(f"worker_concurrency must be a whole number >= 1 (or 'auto'), not {value!r}")
    return number


def prefetch_setting(value: Any) -> int:
    """``worker_prefetch_multiplier``: a whole number >= 0 or its text (``'4'``: Celery's
    worker converts it with ``int()``); 0 is Celery's "no limit"."""
    number = _whole(value)
    if number is None or number < 0:
        raise ConfigurationError(f"worker_prefetch_multiplier must be a whole number >= 0, not {value!r}")
    return number


def seconds_setting(setting: str, value: Any) -> float:
    """A time limit setting: a positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigurationError(f"{setting} must be a positive number of seconds, not {value!r}")
    return float(value)


def count_setting(setting: str, value: Any) -> int:
    """A count setting (tasks, KiB): a whole number >= 1."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if number is None or number < 1:
        raise ConfigurationError(f"{setting} must be a whole number >= 1, not {value!r}")
    return number


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
