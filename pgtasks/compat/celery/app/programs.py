"""Celery's programs embedded in a process: ``app.WorkController`` and ``app.Worker`` (Celery's
``celery.worker.WorkController`` and ``celery.apps.worker.Worker``) run a pgtasks worker of the
app, ``app.Beat`` (``celery.apps.beat.Beat``) runs pgtasks beat, in this process until a stop
signal (or ``stop()``/``terminate()``) ends them.

Celery's keyword options become the flags of ``pgtasks worker``/``pgtasks beat``, and the
command runs as ``app.worker_main`` runs it (bridge/command_line.py): one start-up, the
app's settings, signals and the worker's handling of SIGTERM (warm) and SIGQUIT (cold). The
flags pgtasks accepts and ignores are passed on, so they warn as on the command line, and so
are the options the app added (``app.user_options``); an option pgtasks has no flag for is
refused at once with a TypeError naming it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pgtasks.compat.bridge.command_line import run_command
from pgtasks.compat.celery import signals
from pgtasks.compat.celery._state import app_or_default
from pgtasks.compat.celery.app.amqp import queue_names
from pgtasks.compat.celery.utils.log import mlevel
from pgtasks.compat.celery.utils.nodenames import default_nodename
from pgtasks.worker.pools import DEFAULT_POOL, POOLS, pool_class

__all__ = ["Beat", "WorkController", "Worker"]

Convert = Callable[[str, Any], str]
GREEN_POOLS = ("eventlet", "gevent")  # Celery's; `pgtasks worker -P` runs them on threads


def _whole(name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"option {name} takes a whole number, not {value!r}")
    return str(value)


def _seconds(name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"option {name} takes a number of seconds, not {value!r}")
    return repr(float(value))


def _level(name: str, value: Any) -> str:
    return logging.getLevelName(mlevel(value))


def _pool(name: str, value: Any) -> str:
    if value not in (*POOLS, *GREEN_POOLS):
        raise ValueError(
            f"option {name} takes a pool name, one of {', '.join(POOLS + GREEN_POOLS)}, not {value!r}"
        )
    return str(value)


def _queues(name: str, value: Any) -> str:
    names = queue_names(value)
    if not names:
        raise ValueError(f"option {name} takes queue names ('a,b', a list of names or Queues), not {value!r}")
    return ",".join(names)


def _text(name: str, value: Any) -> str:
    return str(value)


def _autoscale(name: str, value: Any) -> str:
    """``'10,3'``, or ``(10, 3)`` / ``[10, 3]`` as Celery's worker also takes it."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


SWITCH = None  # an option that is a flag without a value (given when true)
Options = Mapping[str, tuple[str, Convert | None]]

# Celery's options of the worker that pgtasks ignores (with a warning, as on the command line).
IGNORED_BY_WORKER: Options = {
    "logfile": ("--logfile", _text),
    "pidfile": ("--pidfile", _text),
    "optimization": ("--optimization", _text),  # 'default' or 'fair', checked by the flag
    "O": ("--optimization", _text),
    "statedb": ("--statedb", _text),
    "state_db": ("--statedb", _text),
    "heartbeat_interval": ("--heartbeat-interval", _text),
    "exclude_queues": ("--exclude-queues", _queues),
    "schedule": ("--schedule", _text),
    "schedule_filename": ("--schedule", _text),
    "scheduler": ("--scheduler", _text),
    "scheduler_cls": ("--scheduler", _text),
    "task_events": ("--task-events", SWITCH),
    "without_gossip": ("--without-gossip", SWITCH),
    "without_mingle": ("--without-mingle", SWITCH),
    "without_heartbeat": ("--without-heartbeat", SWITCH),
    "purge": ("--purge", SWITCH),
    "pool_restarts": ("--pool-restarts", SWITCH),
}
WORKER_OPTIONS: Options = {
    "concurrency": ("--concurrency", _whole),
    "pool": ("--pool", _pool),
    "pool_cls": ("--pool", _pool),
    "queues": ("--queues", _queues),
    "hostname": ("--hostname", _text),
    "loglevel": ("--loglevel", _level),
    "prefetch_multiplier": ("--prefetch-multiplier", _whole),
    "max_tasks_per_child": ("--max-tasks-per-child", _whole),
    "max_memory_per_child": ("--max-memory-per-child", _whole),
    "time_limit": ("--time-limit", _seconds),
    "task_time_limit": ("--time-limit", _seconds),
    "soft_time_limit": ("--soft-time-limit", _seconds),
    "task_soft_time_limit": ("--soft-time-limit", _seconds),
    "beat": ("--beat", SWITCH),
    "autoscale": ("--autoscale", _autoscale),
    **IGNORED_BY_WORKER,
}
BEAT_OPTIONS: Options = {
    "max_interval": ("--max-interval", _seconds),
    "loglevel": ("--loglevel", _level),
    "schedule": ("--schedule", _text),
    "scheduler": ("--scheduler", _text),
    "scheduler_cls": ("--scheduler", _text),
    "hostname": ("--hostname", _text),
    "logfile": ("--logfile", _text),
    "pidfile": ("--pidfile", _text),
}


def added_options(app: Any, command: str) -> dict[str, tuple[str, Convert | None]]:
    """The options the app added to ``command`` (``app.user_options[command]``, click
    Options) by name: the command takes them, as it does on the command line."""
    found: dict[str, tuple[str, Convert | None]] = {}
    for option in getattr(app, "user_options", {}).get(command, ()):
        flags = list(getattr(option, "opts", ()))
        name = getattr(option, "name", None)
        if flags and name:
            found[name] = (max(flags, key=len), SWITCH if getattr(option, "is_flag", False) else _text)
    return found


class _Program:
    """A pgtasks command of the app run in this process from Celery's keyword options."""

    command = ""
    accepted: Options = {}

    def __init__(self, app: Any, **options: Any) -> None:
        kind = type(self).__name__
        self.app = app_or_default(app)
        accepted = {**self.accepted, **added_options(self.app, self.command)}
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise TypeError(
                f"{kind}() got options pgtasks' {self.command} does not have: {', '.join(unknown)} "
                f"(it takes {', '.join(sorted(accepted))})"
            )
        self.options = options
        self.argv: list[str] = [self.command]
        for name, value in options.items():
            flag, convert = accepted[name]
            if value is None or value is False:
                continue  # Celery passes None for an option left to the settings
            try:
                # flag=value: a value that starts with "-" is not read as a flag
                self.argv.append(flag if convert is SWITCH else f"{flag}={convert(name, value)}")
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{kind}(): {exc}") from None
        self.exitcode: int | None = None

    def _run(self) -> int:
        """Run the command here until it stops; its exit status (also in ``exitcode``)."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                f"{type(self).__name__} runs on the main thread, which receives the stop signals, "
                f"not on {threading.current_thread().name!r}: for a worker on a thread of a test "
                "use celery.contrib.testing.worker.start_worker"
            )
        self.exitcode = run_command(self.app, self.argv)
        return self.exitcode


class WorkController(_Program):
    """A pgtasks worker of the app, run in this process by :meth:`start` (on the main thread)
    until SIGTERM/SIGINT (warm shutdown) or SIGQUIT (cold), or :meth:`stop`/:meth:`terminate`
    from another thread. Options: Celery's (``concurrency``, ``pool``, ``queues``,
    ``hostname``, ``loglevel``, ``prefetch_multiplier``, time limits, ...); see
    :data:`WORKER_OPTIONS`."""

    command = "worker"
    accepted = WORKER_OPTIONS

    def __init__(self, app: Any = None, hostname: str | None = None, **options: Any) -> None:
        super().__init__(app, hostname=hostname, **options)
        self.hostname = default_nodename(hostname)
        self._settings(options)
        self._running = False
        self._serving = False
        self._pending: list[int] = []  # stop signals asked for before the worker served

    def _settings(self, options: dict[str, Any]) -> None:
        """Celery's attributes of the worker it will run: each option given, else the app's
        ``worker_*``/``task_*`` setting, else the default (``pool_cls`` is pgtasks' pool
        class: Celery's eventlet and gevent run on threads)."""
        conf = self.app.conf

        def pick(*names: str, default: Any = None) -> Any:
            for name in names:
                if options.get(name) is not None:
                    return options[name]
            return default

        pool = str(pick("pool", "pool_cls", default=conf.get("worker_pool") or DEFAULT_POOL))
        self.pool_cls = pool_class("threads" if pool in GREEN_POOLS else pool)
        self.concurrency = pick("concurrency", default=conf.get("worker_concurrency") or os.cpu_count() or 1)
        self.loglevel = pick("loglevel", default="WARNING")
        self.logfile = pick("logfile")
        multiplier = conf.get("worker_prefetch_multiplier", 4)
        self.prefetch_multiplier = pick("prefetch_multiplier", default=multiplier)
        self.max_tasks_per_child = pick("max_tasks_per_child", default=conf.get("worker_max_tasks_per_child"))
        self.max_memory_per_child = pick(
            "max_memory_per_child", default=conf.get("worker_max_memory_per_child")
        )
        self.task_time_limit = pick("time_limit", "task_time_limit", default=conf.get("task_time_limit"))
        self.task_soft_time_limit = pick(
            "soft_time_limit", "task_soft_time_limit", default=conf.get("task_soft_time_limit")
        )
        self.task_events = True  # every state change is a row
        self.disable_rate_limits = bool(conf.get("worker_disable_rate_limits", False))

    def start(self) -> None:
        """Run the worker until it is stopped; its exit status is then in ``exitcode``."""
        if self._running:
            raise RuntimeError(f"the worker {self.hostname} is running already")
        self._running, self._serving = True, False
        signals.worker_ready.connect(self._ready, weak=False)
        try:
            self._run()
        finally:
            signals.worker_ready.disconnect(self._ready)
            self._running = self._serving = False
            self._pending.clear()

    def _ready(self, sender: Any = None, **kwargs: Any) -> None:
        if getattr(sender, "app", None) is not self.app:
            return
        self.hostname = sender.hostname
        self._serving = True
        self._send_pending()

    def stop(self, in_sighandler: bool = False, exitcode: int | None = None) -> None:
        """Warm shutdown, as SIGTERM: no new task, running ones finish (within the grace
        period), then :meth:`start` returns. Asked before the worker serves, it stops as soon
        as it does; a second stop is a cold shutdown. Does nothing when not running."""
        self._signal(signal.SIGTERM)

    def terminate(self, in_sighandler: bool = False) -> None:
        """Cold shutdown, as SIGQUIT: the process exits at once (status 1); the tasks it was
        running are recovered from the database. Does nothing when not running."""
        self._signal(signal.SIGQUIT)

    def _signal(self, signum: int) -> None:
        # The worker handles the signal on the main thread; a signal asked for before its
        # handler exists waits for worker_ready. list.append/pop are atomic: never sent twice.
        if self._running:
            self._pending.append(signum)
            if self._serving:
                self._send_pending()

    def _send_pending(self) -> None:
        while True:
            try:
                signum = self._pending.pop(0)
            except IndexError:
                return
            os.kill(os.getpid(), signum)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.hostname} of {self.app!r}>"


class Worker(WorkController):
    """Celery's ``app.Worker`` (the worker as ``celery worker`` runs it): the same
    :class:`WorkController`, printing pgtasks' banner."""


class Beat(_Program):
    """pgtasks beat for the app, run in this process by :meth:`run` (on the main thread) until
    SIGTERM/SIGINT/SIGQUIT. Options: ``max_interval``, ``loglevel``, ``logfile``, ``pidfile``;
    Celery's ``schedule``, ``scheduler``/``scheduler_cls``, ``hostname`` are ignored with the
    command's warning (the schedules' state is in the database)."""

    command = "beat"
    accepted = BEAT_OPTIONS

    def run(self) -> int:
        """Fire the app's schedules until a stop signal; the exit status."""
        return self._run()
