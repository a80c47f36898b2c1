"""``pgtasks``: worker, beat, migrate, tasks (list, get, cancel, resume, fork), schedule, queue,
roles, dashboard, demo."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from pgtasks.app import App
from pgtasks.cli.beat import add_commands as add_beat_commands
from pgtasks.cli.beat import run_command as run_beat_command
from pgtasks.cli.database import configured_url
from pgtasks.cli.loader import load_app
from pgtasks.cli.provisioning import add_commands as add_provisioning_commands
from pgtasks.cli.provisioning import print_migrations, print_roles
from pgtasks.cli.startup import retry_on_startup, wait_for_database
from pgtasks.client import Client
from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError, PgtasksError
from pgtasks.engine.flow import parse_rate_limit
from pgtasks.engine.settings import Settings, validate_queue_name
from pgtasks.management import TaskManagement
from pgtasks.scheduler.beat import BeatThread, start_beat_thread
from pgtasks.sysdb.records import QueueSettings, QueueUpsert
from pgtasks.sysdb.urls import redact_url
from pgtasks.worker.pools import POOLS

log = logging.getLogger("pgtasks.worker")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgtasks", description="A Celery-compatible task queue on PostgreSQL."
    )
    parser.add_argument("-A", "--app", help="application: module, module:attr")
    sub = parser.add_subparsers(dest="command", required=True)

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
        help="prefork (child processes, default), threads or solo",
    )
    worker.add_argument("--time-limit", type=float, help="hard limit per task in seconds (prefork)")
    worker.add_argument("--soft-time-limit", type=float, help="raise SoftTimeLimitExceeded after S seconds")
    worker.add_argument("--max-tasks-per-child", type=int, help="replace a child after N tasks (prefork)")
    worker.add_argument("-n", "--hostname", help="executor id (default pgtasks@<host>)")
    worker.add_argument("-l", "--loglevel", default="INFO")
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

    migrate = sub.add_parser("migrate", help="create or upgrade the pgtasks schema")
    migrate.add_argument("--database-url", help="default: PGTASKS_DATABASE_URL (no SQLite fallback)")
    migrate.add_argument("--schema", default="pgtasks")
    migrate.add_argument(
        "--print-sql", action="store_true", help="print the pending migrations as SQL instead of running them"
    )

    tasks = sub.add_parser("tasks", help="list and manage tasks")
    tasks.add_argument("--database-url")
    tasks.add_argument("--schema", default="pgtasks")
    tsub = tasks.add_subparsers(dest="action", required=True)
    listing = tsub.add_parser("list")
    listing.add_argument("--status")
    listing.add_argument("--name")
    listing.add_argument("--queue")
    listing.add_argument("--limit", type=int, default=50)
    for action in ("get", "cancel", "resume"):
        tsub.add_parser(action).add_argument("task_id")
    fork = tsub.add_parser("fork")
    fork.add_argument("task_id")
    fork.add_argument("--start-step", type=int, default=1)

    queue = sub.add_parser("queue", help="list queues, change their flow control, pause and resume them")
    queue.add_argument("--database-url")
    queue.add_argument("--schema", default="pgtasks")
    qsub = queue.add_subparsers(dest="action", required=True)
    qsub.add_parser("list")
    qset = qsub.add_parser("set", help="change settings; running workers pick them up")
    qset.add_argument("name")
    qset.add_argument("--concurrency", help="global limit across workers, or 'none'")
    qset.add_argument("--worker-concurrency", help="limit per worker process, or 'none'")
    qset.add_argument("--rate-limit", help="'10/m', '100/s', '5/30s', or 'none'")
    qset.add_argument("--partitioned", action=argparse.BooleanOptionalAction, default=None)
    pause = qsub.add_parser("pause", help="stop workers from claiming the queue's tasks (running ones go on)")
    pause.add_argument("name")
    resume = qsub.add_parser("resume", help="let workers claim from a paused queue again")
    resume.add_argument("name")

    add_beat_commands(sub)
    add_provisioning_commands(sub)

    board = sub.add_parser("dashboard", help="serve the web dashboard, Flower's REST API and /metrics")
    board.add_argument("--address", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    board.add_argument("--port", type=int, default=5555)
    board.add_argument("--basic-auth", help="user:password[,user2:password2]; required off localhost")
    board.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    board.add_argument("--database-url", help="without -A: the database to show")
    board.add_argument("--schema", default="pgtasks")

    demo = sub.add_parser("demo", help="run a small durable workload on the embedded SQLite database")
    demo.add_argument("--database-url", help="default: sqlite:///pgtasks-demo.sqlite3")
    demo.add_argument("--tasks", type=int, default=12)
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
    if args.command == "queue":
        return _queue(args)
    if args.command == "dashboard":
        return _dashboard(args)
    if args.command in ("beat", "schedule"):
        return run_beat_command(args)
    if args.command == "demo":
        from pgtasks.demo import run_demo

        return run_demo(args.database_url or "sqlite:///pgtasks-demo.sqlite3", args.tasks)
    raise AssertionError(args.command)


def _worker(args: argparse.Namespace) -> int:
    from pgtasks.worker.process import LOG_FORMAT, run_worker
    from pgtasks.worker.worker import WorkerOptions

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
    )
    definitions = app.beat_definitions() if args.beat else []  # checked before the worker starts
    beats: list[BeatThread] = []

    def start_beat() -> None:
        beats.append(start_beat_thread(engine, definitions, app.beat_source))
        beat_started(app, beats[-1], embedded=True)

    def stop_beat() -> None:
        for beat in beats:
            if not beat.stop():
                log.warning("the beat thread did not stop within 10 s")

    after_start = hooks.after_start(start_beat if args.beat else None)
    try:
        logging.basicConfig(level=args.loglevel.upper(), format=LOG_FORMAT, stream=sys.stderr)
        wait_for_database(engine, log, retry_on_startup(app, args.wait_for_database))
        name = app.main or spec
        return run_worker(
            engine, options, name, args.loglevel, after_start=after_start, before_stop=stop_beat
        )
    finally:
        hooks.stopped()


def _optional_int(value: str, flag: str) -> int | None:
    if value.lower() == "none":
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(f"{flag} takes a whole number or 'none', not {value!r}") from None


def _engine(database_url: str | None, schema: str) -> Engine:
    """An engine on the database the flags name, for the commands that need no app."""
    return Engine(Settings(database_url=configured_url(database_url), schema=schema))


def _queue(args: argparse.Namespace) -> int:
    engine = _engine(args.database_url, args.schema)
    admin = engine.admin
    try:
        if args.action == "set":
            validate_queue_name(args.name)
            changes: dict[str, object] = {}
            if args.concurrency is not None:
                changes["concurrency"] = _optional_int(args.concurrency, "--concurrency")
            if args.worker_concurrency is not None:
                changes["worker_concurrency"] = _optional_int(args.worker_concurrency, "--worker-concurrency")
            if args.rate_limit is not None:
                rate = None if args.rate_limit.lower() == "none" else args.rate_limit
                changes["rate_limit_max"], changes["rate_limit_period_sec"] = parse_rate_limit(rate)
            if args.partitioned is not None:
                changes["partition_queue"] = args.partitioned
            current = {q.name: q for q in admin.queues((args.name,))}.get(args.name, QueueSettings(args.name))
            wanted = dataclasses.replace(current, **changes)  # type: ignore[arg-type]
            admin.upsert_queue(QueueUpsert(wanted, frozenset(changes)))
        elif args.action in ("pause", "resume"):
            admin.set_queue_paused(args.name, args.action == "pause")
        print(f"{'queue':20} {'concurrency':>11} {'per worker':>10} {'rate limit':>14} partitioned  paused")
        for q in admin.queues():
            rate = f"{q.rate_limit_max}/{q.rate_limit_period_sec:g}s" if q.rate_limit_max else "-"
            print(
                f"{q.name:20} {q.concurrency or '-':>11} {q.worker_concurrency or '-':>10} {rate:>14} "
                f"{'yes' if q.partition_queue else 'no':11}  {'yes' if q.paused else 'no'}"
            )
    finally:
        engine.close()
    return 0


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
    if args.action == "list":
        rows = manager.list_tasks(status=args.status, name=args.name, queue=args.queue, limit=args.limit)
        print(f"{'id':36}  {'status':10}  {'name':30}  {'queue':12}  attempts")
        for r in rows:
            name, queue = r.name[:30], r.queue_name[:12]
            print(f"{r.task_id:36}  {r.status.value:10}  {name:30}  {queue:12}  {r.recovery_attempts}")
        return 0
    if args.action == "get":
        info = manager.get_task(args.task_id)
        if info is None:
            print(f"no task with id {args.task_id!r}", file=sys.stderr)
            return 1
        task = dataclasses.asdict(info)
        task["status"] = info.status.value
        task["steps"] = [dataclasses.asdict(s) for s in info.steps or ()]
        task["error_summary"] = info.error_summary
        print(json.dumps(task, indent=2, default=str))
        return 0
    if args.action == "fork":
        print(manager.fork_task(args.task_id, start_step=args.start_step))
        return 0
    done = manager.cancel_task(args.task_id) if args.action == "cancel" else manager.resume_task(args.task_id)
    verdict = "done" if done else "nothing to do (unknown task, or a state that forbids it)"
    print(f"{args.action}: {verdict}")
    return 0 if done else 1
