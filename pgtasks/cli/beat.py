"""``pgtasks beat`` (the scheduler process) and ``pgtasks schedule list|pause|resume|delete|
trigger|backfill``."""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from pgtasks.cli.database import command_engine
from pgtasks.cli.loader import load_app
from pgtasks.cli.options import (
    DETACH,
    add_command,
    add_daemon_options,
    add_file_options,
    add_ignored,
    add_loglevel_option,
    add_refused,
)
from pgtasks.cli.pidfile import run_holding
from pgtasks.cli.privileges import drop_privileges
from pgtasks.cli.startup import add_wait_option, retry_on_startup, wait_for_database
from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler import admin
from pgtasks.scheduler.beat import Beat, BeatSettings
from pgtasks.scheduler.clock import DatabaseClock
from pgtasks.scheduler.live import SourceFollower
from pgtasks.sysdb.schedule_records import ScheduleRecord, ScheduleStatus
from pgtasks.sysdb.urls import redact_url
from pgtasks.worker.logs import file_handler

log = logging.getLogger("pgtasks.beat")
LOG_FORMAT = "[%(asctime)s: %(levelname)s/beat] %(message)s"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


def add_commands(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``beat`` and ``schedule`` on the main parser's subcommands."""
    beat = add_command(
        sub, "beat", _beat, parents, help="fire periodic tasks (run any number: each due time fires once)"
    )
    add_loglevel_option(beat)
    add_file_options(beat, formats=False)
    beat.add_argument(
        "--max-interval", type=float, default=1.0, help="longest sleep between reads of the schedules (1s)"
    )
    add_wait_option(beat)
    beat.add_argument(
        "--grace", type=float, default=5.0, help="seconds a due time may be late and still be on time (5)"
    )
    celery = beat.add_argument_group("Celery's beat options that pgtasks ignores or refuses")
    add_refused(celery, "--detach", why=DETACH)
    add_ignored(celery, "-s", "--schedule", value=True, why="the schedules' state is in the database")
    celery.add_argument(
        "-S",
        "--scheduler",
        "--scheduler-cls",
        help="the app's beat_scheduler for this beat, as Celery's: django-celery-beat's "
        "DatabaseScheduler is read; another is warned of",
    )
    add_ignored(celery, "-n", "--hostname", value=True)
    add_ignored(
        celery,
        "--enable-remote-control",
        "--no-enable-remote-control",
        why="pgtasks beat needs no remote control: its state is in the database",
    )
    add_daemon_options(celery, files=True)

    schedule = add_command(sub, "schedule", _schedule, parents, help="list and manage schedules at runtime")
    schedule.add_argument("--database-url", help="default: PGTASKS_DATABASE_URL (no SQLite fallback)")
    schedule.add_argument("--schema", default="pgtasks", help="the pgtasks schema (default pgtasks)")
    actions = schedule.add_subparsers(dest="action", required=True)
    listing = add_command(actions, "list", None, parents, help="schedules with their next fire time")
    listing.add_argument("--status", help="ACTIVE, PAUSED or INACTIVE")
    for action, text in (
        ("pause", "stop firing until resumed"),
        ("resume", "fire again from now on"),
        ("delete", "delete the schedule (its fired tasks stay)"),
        ("trigger", "fire once now"),
    ):
        add_command(actions, action, None, parents, help=text).add_argument("name", help="the schedule")
    backfill = add_command(
        actions, "backfill", None, parents, help="fire every due time in a range that has not fired"
    )
    backfill.add_argument("name", help="the schedule")
    backfill.add_argument("--since", required=True, help="ISO time, e.g. 2026-11-22T08:00:00Z (naive: UTC)")
    backfill.add_argument("--until", help="ISO time (default: now)")


def _beat(args: argparse.Namespace) -> int:
    """``pgtasks beat``; its ``--pidfile`` (Celery's beat takes the path as it is) names it while
    it runs."""
    if not args.app:
        print("pgtasks beat: -A/--app is required", file=sys.stderr)
        return 2
    drop_privileges(args.uid, args.gid)  # before the pidfile, which the user then owns
    return run_holding(args.pidfile, lambda: _run_beat(args))


def _run_beat(args: argparse.Namespace) -> int:
    from pgtasks.compat.bridge.worker_logging import setup_beat_logging
    from pgtasks.compat.bridge.worker_start import beat_started, use_scheduler

    app = load_app(args.app)
    use_scheduler(app, args.scheduler)
    if not setup_beat_logging(app, args.loglevel, args.logfile):
        output = {"handlers": [file_handler(args.logfile)]} if args.logfile else {"stream": sys.stderr}
        logging.basicConfig(level=args.loglevel.upper(), format=LOG_FORMAT, **output)
    wait_for_database(app.engine, log, retry_on_startup(app, args.wait_for_database))
    beat = Beat(app.engine, settings=BeatSettings(max_interval=args.max_interval, grace=args.grace))
    configured = app.beat_definitions()
    beat.sync(configured, app.beat_source)
    live = app.live_schedule_sources()
    beat.follow(live)
    follower = SourceFollower(live, beat.sync)
    followed = follower.sync_now()
    # Signals are caught before beat_init is sent: a supervisor that stops the beat as soon as
    # it has started must get a clean stop, not the default action of SIGTERM.
    wake_read = _catch_stop_signals()
    beat_started(app, beat, embedded=False)
    print(banner(app.engine, app.main or args.app, len(configured), followed), file=sys.stderr, flush=True)
    follower.start()
    try:
        return _run_until_signal(beat, wake_read)
    finally:
        follower.stop()


def banner(engine: Engine, app_name: str, configured: int, followed: int = 0) -> str:
    """What the beat loaded: every stored schedule with its next fire time."""
    records = admin.listing(engine)
    now = DatabaseClock(engine.schedules).now()
    lines = [
        f"pgtasks beat: app {app_name}, database {redact_url(engine.settings.database_url)} "
        f"(schema {engine.database_target.schema}), pid {os.getpid()}",
        f"{configured} schedules from beat_schedule"
        + (f", {followed} from a database scheduler (followed while beat runs)" if followed else "")
        + f"; {len(records)} stored:",
        *(_schedule_line(r, now) for r in records),
    ]
    return "\n".join(lines)


def _schedule_line(record: ScheduleRecord, now: dt.datetime) -> str:
    upcoming = admin.next_fire_of(record, now)
    when = upcoming.strftime("%Y-%m-%dT%H:%M:%SZ") if upcoming else "-"
    timing = (
        record.schedule if record.interval_seconds is not None else f"{record.schedule} ({record.timezone})"
    )
    return f"  {record.name:30} {record.status.value:8} {timing:34} next {when:20} -> {record.task_name}"


def _catch_stop_signals() -> int:
    """Route SIGTERM/SIGINT/SIGQUIT to a pipe (the wakeup fd, so no handler touches a lock);
    return the pipe's read end."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda _signum, _frame: None)
    return wake_read


def _run_until_signal(beat: Beat, wake_read: int) -> int:
    """Beat on a thread; the main thread waits for a stop signal on ``wake_read`` and then
    stops the loop between two ticks."""
    stop = threading.Event()
    runner = threading.Thread(target=beat.run, args=(stop,), name="pgtasks-beat", daemon=True)
    runner.start()
    log.info("beat ready")
    while runner.is_alive():
        ready, _, _ = select.select([wake_read], [], [], 0.5)
        if ready and os.read(wake_read, 64):
            log.info("stopping")
            stop.set()
            runner.join(10)
            break
    else:
        log.critical("the beat loop stopped unexpectedly")
        return 1
    logging.shutdown()
    return 0


def _when(text: str | None, flag: str) -> dt.datetime | None:
    if text is None:
        return None
    # Python 3.10's fromisoformat does not read a trailing "Z".
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        return dt.datetime.fromisoformat(iso)
    except ValueError:
        raise ConfigurationError(
            f"{flag} takes an ISO time such as 2026-11-22T08:00:00Z, not {text!r}"
        ) from None


def _schedule(args: argparse.Namespace) -> int:
    with command_engine(args) as engine:
        now = DatabaseClock(engine.schedules).now()
        if args.action == "list":
            records = admin.listing(engine, args.status)
            print(f"  {'name':30} {'status':8} {'timing':34} {'next fire (UTC)':25} -> task")
            for record in records:
                print(_schedule_line(record, now))
            return 0
        if args.action in ("pause", "resume"):
            status = ScheduleStatus.PAUSED if args.action == "pause" else ScheduleStatus.ACTIVE
            print(_schedule_line(admin.set_status(engine, args.name, status), now))
            return 0
        if args.action == "delete":
            if admin.delete(engine, args.name):
                print(f"deleted {args.name}")
                return 0
            print(f"no schedule named {args.name!r}", file=sys.stderr)
            return 1
        if args.action == "trigger":
            print(admin.trigger(engine, args.name))
            return 0
        since = _when(args.since, "--since")
        assert since is not None
        report = admin.backfill(engine, args.name, since, _when(args.until, "--until"))
        for task_id in report.fired:
            print(f"fired {task_id}")
        print(f"backfill {args.name}: {len(report.fired)} fired, {len(report.existing)} had fired before")
        return 0
