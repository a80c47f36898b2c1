"""``pgtasks``: worker, beat, migrate, tasks (list, get, cancel, resume, fork), schedule, queue,
roles, dashboard, demo."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pgtasks import __version__
from pgtasks.app import App
from pgtasks.cli.beat import add_commands as add_beat_commands
from pgtasks.cli.beat import run_command as run_beat_command
from pgtasks.cli.celery_import.command import add_command as add_import_celery_command
from pgtasks.cli.celery_import.command import run as run_import_celery
from pgtasks.cli.compat_commands import add_compat_commands
from pgtasks.cli.database import configured_url
from pgtasks.cli.health import add_health_command, run_health
from pgtasks.cli.loader import load_app
from pgtasks.cli.provisioning import add_commands as add_provisioning_commands
from pgtasks.cli.provisioning import print_migrations, print_roles
from pgtasks.cli.prune import add_command as add_prune_command
from pgtasks.cli.prune import run as run_prune
from pgtasks.cli.startup import retry_on_startup, wait_for_database
from pgtasks.cli.tasks import run_queue, run_tasks
from pgtasks.client import Client
from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError, PgtasksError
from pgtasks.engine.settings import Settings
from pgtasks.management import TaskManagement
from pgtasks.scheduler.beat import BeatThread, start_beat_thread
from pgtasks.sysdb.urls import redact_url
from pgtasks.worker.pools import POOLS
from pgtasks.worker.pruner import PRUNE_INTERVAL

log = logging.getLogger("pgtasks.worker")
URL_HELP = "default: PGTASKS_DATABASE_URL"
SCHEMA_HELP = "the pgtasks schema (default pgtasks)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgtasks", description="A Celery-compatible task queue on PostgreSQL."
    )
    parser.add_argument("-A", "--app", help="application: module, module:attr")
    parser.add_argument("--version", action="version", version=f"pgtasks {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    worker = sub.add_parser("worker", help="run tasks from queues")
    worker.add_argument("-A", "--app", dest="worker_app", help="application: module, module:attr")
    worker.add_argument("-Q", "--queues", help="comma-separated queues (default: the app's default queue)")
    worker.add_argument(
        "-c",
        "--concurrency",
        type=int,
        default=os.cpu_count() or 1,
        help="tasks at once (default: one per CPU, as Celery)",
    )
    worker.add_argument(
        "-P",
        "--pool",
        choices=POOLS,
        default="prefork",
        help="prefork (child processes, default), threads, solo, or asyncio (one event loop for async tasks)",
    )
    worker.add_argument("--time-limit", type=float, help="hard limit per task in seconds (prefork, asyncio)")
    worker.add_argument("--soft-time-limit", type=float, help="raise SoftTimeLimitExceeded after S seconds")
    worker.add_argument("--max-tasks-per-child", type=int, help="replace a child after N tasks (prefork)")
    worker.add_argument(
        "--prune-interval",
        type=float,
        default=PRUNE_INTERVAL,
        help=f"seconds between rounds deleting tasks past result_expires (default {PRUNE_INTERVAL:g})",
    )
    worker.add_argument(
        "--prefetch-multiplier",
        type=int,
        help="prefork: tasks claimed per process, running and waiting (default 4, as Celery; 1: none ahead)",
    )
    worker.add_argument("-n", "--hostname", help="executor id (default pgtasks@<host>)")
    worker.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text: Celery's lines (default); json: one JSON object per line, for log collectors",
    )
    worker.add_argument("-l", "--loglevel", default="INFO", help="DEBUG, INFO (default), WARNING, ERROR")
    worker.add_argument("--lease-seconds", type=float, help="heartbeat lease (default 30)")
    worker.add_argument("--poll-interval", type=float, help="seconds between polls when idle (default 1)")
    worker.add_argument("--shutdown-grace", type=float, default=30.0, help="warm shutdown wait (default 30)")
    worker.add_argument("-B", "--beat", action="store_true", help="also run the scheduler in this worker")
    worker.add_argument(
        "--no-wait-for-database",
        dest="wait_for_database",
        action="store_const",
        const=False,
        default=None,
        help="exit at once if the database is unreachable at start-up (default: wait for it)",
    )
    worker.add_argument(
        "--health-file",
        type=Path,
        help="renew this file's time while the heartbeat is fresh (check: pgtasks health --file)",
    )
    worker.add_argument(
        "--health-port", type=int, help="serve GET /livez and /readyz on this port (0: any free port)"
    )
    worker.add_argument(
        "--health-address", default="0.0.0.0", help="interface of --health-port (default 0.0.0.0)"
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus GET /metrics on this port (0: any free port; needs pgtasks[dashboard])",
    )
    worker.add_argument(
        "--metrics-address", default="0.0.0.0", help="interface of --metrics-port (default 0.0.0.0)"
    )

    migrate = sub.add_parser("migrate", help="create or upgrade the pgtasks schema")
    migrate.add_argument("--database-url", help="default: PGTASKS_DATABASE_URL (no SQLite fallback)")
    migrate.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    migrate.add_argument(
        "--print-sql", action="store_true", help="print the pending migrations as SQL instead of running them"
    )

    tasks = sub.add_parser("tasks", help="list and manage tasks")
    tasks.add_argument("--database-url", help=URL_HELP)
    tasks.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    tsub = tasks.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = tsub.add_parser("list", help="newest tasks first: state, name, queue, time, worker, error")
    listing.add_argument("--status", help="ENQUEUED, DELAYED, PENDING, SUCCESS, ERROR, CANCELLED, ...")
    listing.add_argument("--name", help="only tasks of this name")
    listing.add_argument("--queue", help="only tasks of this queue")
    listing.add_argument("--limit", type=int, default=50, help="at most N tasks (default 50)")
    get = tsub.add_parser("get", help="one task: fields, steps and traceback")
    get.add_argument("task_id", help="the task id")
    get.add_argument("--json", action="store_true", help="print the task as JSON (times in epoch ms)")
    actions = {
        "cancel": "cancel a task that has not finished",
        "resume": "re-enqueue a cancelled or dead-lettered task from its last step",
    }
    for action, text in actions.items():
        tsub.add_parser(action, help=text).add_argument("task_id", help="the task id")
    fork = tsub.add_parser("fork", help="start a copy of a task that reuses its steps before --start-step")
    fork.add_argument("task_id", help="the task id")
    fork.add_argument("--start-step", type=int, default=1, help="the first step to run again (1-based)")

    queue = sub.add_parser("queue", help="list queues, change their flow control, pause and resume them")
    queue.add_argument("--database-url", help=URL_HELP)
    queue.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    qsub = queue.add_subparsers(dest="action", required=True, metavar="ACTION")
    qsub.add_parser("list", help="queues: waiting and running counts, oldest waiting age, limits")
    qset = qsub.add_parser("set", help="change settings; running workers pick them up")
    qset.add_argument("name", help="the queue")
    qset.add_argument("--concurrency", help="global limit across workers, or 'none'")
    qset.add_argument("--worker-concurrency", help="limit per worker process, or 'none'")
    qset.add_argument("--rate-limit", help="'10/m', '100/s', '5/30s', or 'none'")
    qset.add_argument(
        "--result-expires",
        help="seconds its finished tasks are kept; 'never' (until deleted by hand) or 'default' (the app's)",
    )
    qset.add_argument(
        "--partitioned",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply the limits per partition key",
    )
    pause = qsub.add_parser("pause", help="stop workers from claiming the queue's tasks (running ones go on)")
    pause.add_argument("name", help="the queue")
    resume = qsub.add_parser("resume", help="let workers claim from a paused queue again")
    resume.add_argument("name", help="the queue")

    add_beat_commands(sub)
    add_provisioning_commands(sub)
    add_prune_command(sub, URL_HELP, SCHEMA_HELP)
    add_import_celery_command(sub, URL_HELP)

    board = sub.add_parser("dashboard", help="serve the web dashboard, Flower's REST API and /metrics")
    board.add_argument("--address", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    board.add_argument("--port", type=int, default=5555, help="TCP port (default 5555, as Flower)")
    board.add_argument("--basic-auth", help="user:password[,user2:password2]; required off localhost")
    board.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    board.add_argument("--database-url", help="without -A: the database to show")
    board.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    add_compat_commands(sub)
    add_health_command(sub)

    demo = sub.add_parser("demo", help="run a small durable workload on the embedded SQLite database")
    demo.add_argument("--database-url", help="default: sqlite:///pgtasks-demo.sqlite3")
    demo.add_argument("--tasks", type=int, default=12, help="orders to run (default 12)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from pgtasks.cli.compat_commands import prepare_argv, run_compat_command

    argv = prepare_argv(list(sys.argv[1:] if argv is None else argv))  # Celery's names and flags
    try:
        compat = run_compat_command(argv)
    except PgtasksError as exc:
        print(f"pgtasks: error: {exc}", file=sys.stderr)
        return 2
    if compat is not None:
        return compat
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except PgtasksError as exc:
        print(f"pgtasks: error: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "worker":
        return _worker(args)
    if args.command == "roles":
        return print_roles(args)
    if args.command == "migrate" and args.print_sql:
        return print_migrations(configured_url(args.database_url), args.schema)
    if args.command == "migrate":
        engine = _engine(args.database_url, args.schema)
        try:
            applied = engine.admin.migrate()
        finally:
            engine.close()
        url = redact_url(configured_url(args.database_url))
        print(f"{url}: applied {[m.version for m in applied]}" if applied else f"{url}: up to date")
        return 0
    if args.command == "tasks":
        return _tasks(args)
    if args.command == "prune":
        return _prune(args)
    if args.command == "import-celery":
        return run_import_celery(args)
    if args.command == "queue":
        return _queue(args)
    if args.command == "dashboard":
        return _dashboard(args)
    if args.command in ("beat", "schedule"):
        return run_beat_command(args)
    if args.command == "health":
        return run_health(args)
    if args.command == "demo":
        from pgtasks.demo import run_demo

        return run_demo(args.database_url or "sqlite:///pgtasks-demo.sqlite3", args.tasks)
    raise AssertionError(args.command)


def _worker(args: argparse.Namespace) -> int:
    from pgtasks.worker.health import HealthOptions
    from pgtasks.worker.logs import configure_logging
    from pgtasks.worker.metrics import MetricsOptions
    from pgtasks.worker.process import run_worker
    from pgtasks.worker.worker import DEFAULT_PREFETCH_MULTIPLIER, WorkerOptions

    spec = args.worker_app or args.app
    if not spec:
        print("pgtasks worker: -A/--app is required", file=sys.stderr)
        return 2
    app: App = load_app(spec)
    from pgtasks.cli.compat_commands import beat_started, worker_hooks

    hooks = worker_hooks(app, args)  # a Celery app: its settings, include, signals
    overrides: dict[str, Any] = {}
    if args.lease_seconds is not None:
        overrides["lease_seconds"] = args.lease_seconds
    if args.poll_interval is not None:
        overrides["poll_interval"] = args.poll_interval
    # The app's engine with the flags' settings; it shares the app's registry and connections.
    engine = app.engine.with_settings(**overrides) if overrides else app.engine
    queues = tuple(q.strip() for q in (args.queues or app.settings.default_queue).split(",") if q.strip())
    options = WorkerOptions(
        queues=queues,
        concurrency=args.concurrency,
        executor_id=args.hostname or "",
        shutdown_grace=args.shutdown_grace,
        pool=args.pool,
        time_limit=args.time_limit,
        soft_time_limit=args.soft_time_limit,
        max_tasks_per_child=args.max_tasks_per_child,
        prefetch_multiplier=(
            DEFAULT_PREFETCH_MULTIPLIER if args.prefetch_multiplier is None else args.prefetch_multiplier
        ),
        prune_interval=args.prune_interval,
        outcome_logger=hooks.outcome_logger,
    )
    metrics = MetricsOptions(args.metrics_port, args.metrics_address)  # refused early if not installed
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
        configure_logging(args.loglevel, args.log_format)
        wait_for_database(engine, log, retry_on_startup(app, args.wait_for_database))
        name = app.main or spec
        health = HealthOptions(args.health_file, args.health_port, args.health_address)
        return run_worker(
            engine,
            options,
            name,
            args.loglevel,
            after_start=after_start,
            before_stop=stop_beat,
            health=health,
            metrics=metrics,
        )
    finally:
        hooks.stopped()


def _engine(database_url: str | None, schema: str) -> Engine:
    """An engine on the database the flags name, for the commands that need no app."""
    return Engine(Settings(database_url=configured_url(database_url), schema=schema))


def _prune(args: argparse.Namespace) -> int:
    if args.app:
        return run_prune(load_app(args.app).engine, args)
    engine = _engine(args.database_url, args.schema)
    try:
        return run_prune(engine, args)
    finally:
        engine.close()


def _queue(args: argparse.Namespace) -> int:
    engine = _engine(args.database_url, args.schema)
    try:
        return run_queue(engine, args)
    finally:
        engine.close()


def _dashboard(args: argparse.Namespace) -> int:
    try:
        from pgtasks.dashboard.security import Guard, parse_basic_auth
        from pgtasks.dashboard.server import serve
    except ImportError as exc:
        raise ConfigurationError(
            f"the dashboard needs its extra: pip install 'pgtasks[dashboard]' ({exc})"
        ) from None
    guard = Guard(parse_basic_auth(args.basic_auth), read_only=args.read_only)
    manager: TaskManagement = (
        load_app(args.app) if args.app else Client(configured_url(args.database_url), schema=args.schema)
    )
    logging.basicConfig(level=logging.WARNING, format="[%(asctime)s: %(levelname)s] %(message)s")
    serve(manager, args.address, args.port, guard)
    return 0


def _tasks(args: argparse.Namespace) -> int:
    manager: TaskManagement = (
        load_app(args.app) if args.app else Client(configured_url(args.database_url), schema=args.schema)
    )
    return run_tasks(manager, args)
