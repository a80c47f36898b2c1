"""``pgtasks worker`` (and ``celery worker``): its options, Celery's worker flags, and the run."""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import multiprocessing
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pgtasks.cli.loader import load_app
from pgtasks.cli.options import (
    DETACH,
    POOL_GIVEN,
    add_command,
    add_daemon_options,
    add_file_options,
    add_ignored,
    add_loglevel_option,
    add_pool_option,
    add_refused,
    autoscale,
    comma_list,
    expand_hostname,
    limit_seconds,
    optimization,
    port,
    queue_list,
    seconds,
    whole_or_zero,
)
from pgtasks.cli.pidfile import release, run_holding
from pgtasks.cli.privileges import drop_privileges
from pgtasks.cli.startup import add_wait_option, retry_on_startup, wait_for_database
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.beat import BeatThread, start_beat_thread
from pgtasks.worker.logs import log_to_file_of_process
from pgtasks.worker.node_paths import expand_node_path
from pgtasks.worker.pruner import PRUNE_INTERVAL
from pgtasks.worker.worker import DEFAULT_SHUTDOWN_GRACE

log = logging.getLogger("pgtasks.worker")
ONE_PER_CPU = "one per CPU"
NO_LIMIT = "no limit"


def add_worker_command(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``worker`` on the main parser's subcommands."""
    worker = add_command(sub, "worker", run, parents, help="run tasks from queues")
    worker.add_argument(
        "-Q", "--queues", type=queue_list, help="comma-separated queues (default: the app's default queue)"
    )
    worker.add_argument(
        "-c",
        "--concurrency",
        type=whole_or_zero(ONE_PER_CPU),
        help="tasks at once (default, or 0: one per CPU, as Celery)",
    )
    add_pool_option(worker)
    worker.add_argument(
        "--time-limit", type=limit_seconds, help="hard limit per task in seconds (prefork, asyncio; 0: none)"
    )
    worker.add_argument(
        "--soft-time-limit", type=limit_seconds, help="raise SoftTimeLimitExceeded after S seconds (0: none)"
    )
    worker.add_argument(
        "--max-tasks-per-child",
        type=whole_or_zero(NO_LIMIT),
        help="replace a child after N tasks (prefork; 0: no limit)",
    )
    worker.add_argument(
        "--max-memory-per-child",
        type=whole_or_zero(NO_LIMIT),
        help="replace a child after the task that took its resident memory past K KiB (prefork; 0: no limit)",
    )
    worker.add_argument(
        "-X", "--exclude-queues", help="comma-separated queues not to consume (of -Q, or the app's)"
    )
    worker.add_argument(
        "-I", "--include", help="comma-separated modules to import as the worker starts (their tasks)"
    )
    worker.add_argument(
        "--disable-prefetch",
        action="store_true",
        help="claim only for a free process (--prefetch-multiplier 1, Celery's worker_disable_prefetch)",
    )
    worker.add_argument(
        "--prune-interval",
        type=float,
        default=PRUNE_INTERVAL,
        help=f"seconds between rounds deleting tasks past result_expires (default {PRUNE_INTERVAL:g})",
    )
    worker.add_argument(
        "--prefetch-multiplier",
        type=int,
        help=(
            "tasks claimed per process (thread, coroutine), running and waiting, at most (1: none "
            "ahead); threads and asyncio claim ahead by the task run time within it. Default: 4, "
            "as Celery, or while the tasks run short as many as the worker finishes in 0.25 s "
            "(at most 1,000 beyond its processes); 0, as in Celery, is the default"
        ),
    )
    worker.add_argument(
        "-n",
        "--hostname",
        type=expand_hostname,
        help=(
            "executor id (default pgtasks@<host>; celery@<host> for a Celery app, which also"
            " reads a name without @ as a host: celery@NAME); %%h, %%n, %%d, %%i, %%I expand as in Celery"
        ),
    )
    worker.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text: Celery's lines (default); json: one JSON object per line, for log collectors",
    )
    add_loglevel_option(worker)
    add_file_options(worker, formats=True)
    worker.add_argument("--lease-seconds", type=float, help="heartbeat lease (default 30)")
    worker.add_argument("--poll-interval", type=float, help="seconds between polls when idle (default 1)")
    worker.add_argument(
        "--shutdown-grace",
        type=seconds,
        help=(
            f"warm shutdown wait in seconds (default {DEFAULT_SHUTDOWN_GRACE:g}; a Celery app's worker"
            " waits for its running tasks however long they run, as Celery's, unless its"
            " worker_soft_shutdown_timeout is set)"
        ),
    )
    worker.add_argument("-B", "--beat", action="store_true", help="also run the scheduler in this worker")
    add_wait_option(worker)
    worker.add_argument(
        "--health-file",
        type=Path,
        help="renew this file's time while the heartbeat is fresh (check: pgtasks health --file)",
    )
    worker.add_argument(
        "--health-port", type=port, help="serve GET /livez and /readyz on this port (0: any free port)"
    )
    worker.add_argument(
        "--health-address", default="0.0.0.0", help="interface of --health-port (default 0.0.0.0)"
    )
    worker.add_argument(
        "--metrics-port",
        type=port,
        help="serve Prometheus GET /metrics on this port (0: any free port; needs pgtasks[dashboard])",
    )
    worker.add_argument(
        "--metrics-address", default="0.0.0.0", help="interface of --metrics-port (default 0.0.0.0)"
    )
    celery = worker.add_argument_group("Celery's worker options that pgtasks ignores or refuses")
    celery.add_argument(  # Celery waits this long at a cold shutdown; pgtasks at every stop
        "--soft-shutdown-timeout", dest="shutdown_grace", type=seconds, help="Celery's: as --shutdown-grace"
    )
    add_refused(celery, "-D", "--detach", why=DETACH)
    for flags in (
        ("-E", "--task-events", "--events"),
        ("--without-gossip",),
        ("--without-mingle",),
        ("--without-heartbeat",),
        ("--purge", "--discard"),
        ("--pool-restarts",),
        ("--enable-soft-shutdown-on-idle",),
    ):
        add_ignored(celery, *flags)
    add_ignored(celery, "-O", "--optimization", value=True, check=optimization)
    celery.add_argument(
        "--autoscale",
        type=autoscale,
        metavar="MAX[,MIN]",
        help="Celery's: runs MAX processes (pgtasks does not grow and shrink its pool)",
    )
    for flags in (
        ("-S", "--statedb"),
        ("--heartbeat-interval",),
        ("-s", "--schedule", "--schedule-filename"),
    ):
        add_ignored(celery, *flags, value=True)
    celery.add_argument(
        "--scheduler",
        "--scheduler-cls",
        help="with -B, the app's beat_scheduler, as Celery's (django-celery-beat's is read)",
    )
    add_ignored(
        celery, "--pool-start-method", value=True, why="prefork children fork from pgtasks' own fork server"
    )
    add_daemon_options(celery, files=True)


def run(args: argparse.Namespace) -> int:
    """Start the worker of ``-A``'s app; its exit status. ``--pidfile`` names it while it runs."""
    from pgtasks.compat.bridge.worker_start import node_name, use_scheduler

    if not args.app:
        print("pgtasks worker: -A/--app is required", file=sys.stderr)
        return 2
    app = load_app(args.app)
    if args.beat:
        use_scheduler(app, args.scheduler)
    # As Celery: only the app is loaded as root; the -I modules are imported as the user.
    drop_privileges(getattr(args, "uid", None), getattr(args, "gid", None))
    import_included(args.include)
    # What the command line gave explicitly wins over a Celery app's settings.
    given = {name for name in ("concurrency", "hostname") if getattr(args, name) is not None}
    if getattr(args, POOL_GIVEN, False):
        given.add("pool")
    if args.autoscale:  # Celery's autoscaler wins over -c; its maximum is the fixed pool here
        high, low = args.autoscale
        print(
            f"pgtasks: warning: --autoscale {high},{low}: pgtasks does not grow and shrink its pool; "
            f"running {high} (the maximum) at once",
            file=sys.stderr,
        )
        args.concurrency = high
        given.add("concurrency")
    if not args.concurrency:  # not given, or Celery's -c 0
        args.concurrency = os.cpu_count() or 1
    node = node_name(app, args.hostname)
    log_pattern = args.logfile
    args.logfile = expand_node_path(log_pattern, node) if log_pattern else None
    pidfile = expand_node_path(args.pidfile, node) if args.pidfile else None
    return run_holding(pidfile, lambda: _run(app, args, given, node, log_pattern, pidfile))


def _run(
    app: Any,
    args: argparse.Namespace,
    given: set[str],
    node: str,
    log_pattern: str | None,
    pidfile: str | None,
) -> int:
    """The worker of ``app`` as node ``node`` until it stops; its exit status. ``pidfile`` is
    removed before a cold exit too."""
    from pgtasks.compat.bridge.worker_start import beat_started, worker_hooks
    from pgtasks.worker.health import HealthOptions
    from pgtasks.worker.logs import configure_logging
    from pgtasks.worker.metrics import MetricsOptions
    from pgtasks.worker.process import run_worker
    from pgtasks.worker.worker import WorkerOptions

    hooks = worker_hooks(app, args, given)  # a Celery app: its settings, include, signals
    overrides: dict[str, Any] = {}
    if args.lease_seconds is not None:
        overrides["lease_seconds"] = args.lease_seconds
    if args.poll_interval is not None:
        overrides["poll_interval"] = args.poll_interval
    # The app's engine with the flags' settings; it shares the app's registry and connections.
    engine = app.engine.with_settings(**overrides) if overrides else app.engine
    queues = consumed_queues(args.queues or app.settings.default_queue, args.exclude_queues)
    options = WorkerOptions(
        queues=queues,
        concurrency=args.concurrency,
        executor_id=args.hostname or "",
        shutdown_grace=shutdown_grace(args.shutdown_grace, hooks.app is not None),
        pool=args.pool,
        # A limit flag given 0 is no limit, as in Celery (worker_hooks left the app's setting unread).
        time_limit=args.time_limit or None,
        soft_time_limit=args.soft_time_limit or None,
        max_tasks_per_child=args.max_tasks_per_child or None,
        max_memory_per_child=args.max_memory_per_child or None,
        prefetch_multiplier=prefetch_multiplier(args),
        prune_interval=args.prune_interval,
        outcome_logger=hooks.outcome_logger,
        received_logger=hooks.received_logger,
        on_committed=hooks.on_committed,
        on_received=hooks.on_received,
        on_expired=hooks.on_expired,
        on_time_limit=hooks.on_time_limit,
        custom_commands=hooks.custom_commands,
        report_conf=hooks.report_conf,
        on_child_start=process_logs(log_pattern, node, args.logfile, hooks.on_child_start),
        on_child_exit=hooks.on_child_exit,
        on_heartbeat=hooks.on_heartbeat,
    )
    metrics = MetricsOptions(args.metrics_port, args.metrics_address)  # refused early if not installed
    health = HealthOptions(args.health_file, args.health_port, args.health_address)
    definitions = app.beat_definitions() if args.beat else []  # checked before the worker starts
    beats: list[BeatThread] = []

    def start_beat() -> None:
        beats.append(start_beat_thread(engine, definitions, app.beat_source, app.live_schedule_sources()))
        beat_started(app, beats[-1], embedded=True)

    def stop_beat() -> None:
        for beat in beats:
            if not beat.stop():
                log.warning("the beat thread did not stop within 10 s")

    after_start = hooks.after_start(start_beat if args.beat else None)
    try:
        configure_logging(args.loglevel, args.log_format, logfile=args.logfile)
        warn_of_time_limits(options.time_limit, options.soft_time_limit)
        wait_for_database(engine, log, retry_on_startup(app, args.wait_for_database))
        return run_worker(
            engine,
            options,
            app.main or args.app,
            args.loglevel,
            after_start=after_start,
            before_stop=stop_beat,
            health=health,
            metrics=metrics,
            on_stop_signal=hooks.shutting_down,
            after_stop=hooks.stopped,
            operator_signals=hooks.app is not None,
            before_exit=(lambda: release(Path(pidfile))) if pidfile else None,
        )
    finally:
        hooks.stopped()


def process_logs(
    pattern: str | None, node: str, logfile: str | None, then: Callable[[], None] | None
) -> Callable[[], None] | None:
    """What each prefork process runs as it starts: with ``--logfile`` naming ``%I`` (or
    ``%i``), it logs to a file of its own (``w1-1.log`` for ``ForkPoolWorker-1``), as Celery's
    processes do; then ``then``."""
    if not pattern or logfile is None or not re.search(r"%[iI]", pattern):
        return then

    def start() -> None:
        index = int(multiprocessing.current_process().name.rpartition("-")[2] or 0)
        log_to_file_of_process(logfile, expand_node_path(pattern, node, index))
        if then is not None:
            then()

    return start


def shutdown_grace(given: float | None, celery_app: bool) -> float:
    """``--shutdown-grace``, else 30 s; unbounded for a Celery app, whose warm shutdown waits
    for the running tasks as long as they run (an operator who gave a long task ten minutes
    to stop must not see it cut at 30 s and run again elsewhere)."""
    if given is not None:
        return given
    return math.inf if celery_app else DEFAULT_SHUTDOWN_GRACE


def prefetch_multiplier(args: argparse.Namespace) -> int | None:
    """``--prefetch-multiplier`` (or a Celery app's setting, put there by worker_hooks), else 1
    with ``--disable-prefetch``, else None: Celery's default 4, more for short tasks (see
    WorkerOptions.prefetch_multiplier)."""
    given = args.prefetch_multiplier
    if given is not None and given < 0:
        raise ConfigurationError(f"--prefetch-multiplier must be >= 0 (0: the default), not {given}")
    if given:  # Celery's 0 is "not given": the app's setting, else the default
        return int(given)
    return 1 if args.disable_prefetch else None


def consumed_queues(queues: str, excluded: str | None) -> tuple[str, ...]:
    """The queues of ``-Q`` (or the app's) less those of ``-X``; ConfigurationError when
    none is left. As in Celery, ``-X ''`` (or ``','``) excludes nothing, and a name of no
    consumed queue is ignored: here with a warning (Celery: silently)."""
    named, left_out = comma_list(queues), set(comma_list(excluded))
    left = tuple(name for name in named if name not in left_out)
    if not named:
        raise ConfigurationError(f"no queue to consume: the queues {queues!r} name none")
    stray = [name for name in comma_list(excluded) if name not in named]
    if stray:
        print(
            f"pgtasks: warning: -X/--exclude-queues {','.join(stray)!r}: no such queue is consumed "
            f"(of {','.join(named)!r}); ignored",
            file=sys.stderr,
        )
    if not left:
        raise ConfigurationError(f"-X/--exclude-queues {excluded!r} leaves no queue of {queues!r} to consume")
    return left


def warn_of_time_limits(hard: float | None, soft: float | None) -> None:
    """Warn when the soft time limit cannot act: not below the hard one, the task is killed
    first (Celery accepts this silently)."""
    if hard is not None and soft is not None and soft >= hard:
        log.warning(
            "the soft time limit (%gs) is not below the hard time limit (%gs): a task is killed at "
            "%gs without SoftTimeLimitExceeded being raised first; set the soft limit lower",
            soft,
            hard,
            hard,
        )


def import_included(modules: str | None) -> None:
    """Import the modules of ``-I/--include`` (their tasks register as they load)."""
    for name in comma_list(modules):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigurationError(
                f"-I/--include names {name!r}, which cannot be imported: {exc}"
            ) from None
