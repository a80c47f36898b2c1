"""``pgtasks``: worker, beat, migrate, tasks (list, get, cancel, resume, fork), schedule, queue,
roles, dashboard, demo, and Celery's commands and programs.

The parser is the whole command line. Each command registers itself with the function that
runs it (``set_defaults(func=...)``); Celery's spellings (``-A`` before or after the command,
``-b``, ``--workdir``, the worker's and beat's flags) are options of the same parser (see
:mod:`pgtasks.cli.options`). Nothing happens while parsing: :func:`main` applies the global
options, then runs the command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import closing
from typing import Any

from pgtasks import __version__
from pgtasks.cli.app_options import take_app_options
from pgtasks.cli.beat import add_commands as add_beat_commands
from pgtasks.cli.celery_import.command import add_import_celery_command
from pgtasks.cli.celery_programs import REFUSED_PROGRAMS, add_celery_programs
from pgtasks.cli.compat_commands import add_compat_commands
from pgtasks.cli.dashboard import add_dashboard_command
from pgtasks.cli.database import SCHEMA_HELP, URL_HELP, command_manager
from pgtasks.cli.flower_command import FLOWER_OPTIONS, add_flower_command
from pgtasks.cli.health import add_health_command
from pgtasks.cli.options import Parser, add_command, apply_global_options, global_options
from pgtasks.cli.provisioning import add_migrate_command, add_roles_command
from pgtasks.cli.prune import add_prune_command
from pgtasks.cli.tasks import run_queue, run_tasks
from pgtasks.cli.worker import add_worker_command
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.engine.errors import PgtasksError


def _parser(version: str | None = None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="pgtasks",
        description="A Celery-compatible task queue on PostgreSQL.",
        parents=[global_options(top_level=True)],
    )
    parser.add_argument("--version", action="version", version=version or f"pgtasks {__version__}")
    # Not required: without a command the help is printed (see main), as Celery's.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = [global_options()]

    add_worker_command(sub, common)
    add_migrate_command(sub, common)
    _add_tasks_command(sub, common)
    _add_queue_command(sub, common)
    add_beat_commands(sub, common)
    add_roles_command(sub, common)
    add_prune_command(sub, common)
    add_import_celery_command(sub, [global_options(broker=False)])
    add_dashboard_command(sub, common)
    add_flower_command(sub, common)
    add_compat_commands(sub, common)
    add_celery_programs(sub, common)
    add_health_command(sub, common)
    demo = add_command(
        sub, "demo", _demo, common, help="run a small durable workload on the embedded SQLite database"
    )
    demo.add_argument("--database-url", help="default: sqlite:///pgtasks-demo.sqlite3")
    demo.add_argument("--tasks", type=int, default=12, help="orders to run (default 12)")
    return parser


# The commands whose options a Celery app may extend (``app.user_options``).
APP_OPTION_COMMANDS = frozenset({"worker", "beat", "inspect", "purge", "status", "result", "call"})


def main(argv: Sequence[str] | None = None, version: str | None = None) -> int:
    """Run the command line ``argv`` (default: this process's); its exit status. ``version``:
    what ``--version`` prints (``pgtasks <version>`` by default)."""
    parser = _parser(version)
    # Flower's own options (``--port=5555 --basic_auth=u:p``) are what the parser does not know
    # after ``flower``; for every other command an unknown option is an error, as parse_args.
    args, unknown = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if args.command is None:  # as Celery's: an option it does not know, else the help (exit 0)
        if unknown:
            parser.error(f"No such option {unknown[0].partition('=')[0]!r}")
        parser.print_help()
        return 0
    if args.command in REFUSED_PROGRAMS:  # whatever follows, the answer is why not
        return int(args.func(args))
    flower = getattr(args, FLOWER_OPTIONS, None) is not None
    if flower:
        setattr(args, FLOWER_OPTIONS, unknown)
    elif unknown and not getattr(args, "app", None):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        apply_global_options(args)
        if not flower and args.command in APP_OPTION_COMMANDS and getattr(args, "app", None):
            take_app_options(args, unknown, parser.error)  # the app's own options
        elif unknown and not flower:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        return int(args.func(args))
    except (PgtasksError, ImproperlyConfigured) as exc:  # a wrong setting: one line, no traceback
        print(f"pgtasks: error: {exc}", file=sys.stderr)
        return 2


def _add_tasks_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    tasks = add_command(sub, "tasks", _tasks, common, help="list and manage tasks")
    tasks.add_argument("--database-url", help=URL_HELP)
    tasks.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    tsub = tasks.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = add_command(
        tsub, "list", None, common, help="newest tasks first: state, name, queue, time, worker, error"
    )
    listing.add_argument("--status", help="ENQUEUED, DELAYED, PENDING, SUCCESS, ERROR, CANCELLED, ...")
    listing.add_argument("--name", help="only tasks of this name")
    listing.add_argument("--queue", help="only tasks of this queue")
    listing.add_argument("--limit", type=int, default=50, help="at most N tasks (default 50)")
    get = add_command(tsub, "get", None, common, help="one task: fields, steps and traceback")
    get.add_argument("task_id", help="the task id")
    get.add_argument("--json", action="store_true", help="print the task as JSON (times in epoch ms)")
    actions = {
        "cancel": "cancel a task that has not finished",
        "resume": "re-enqueue a cancelled or dead-lettered task from its last step",
    }
    for action, text in actions.items():
        add_command(tsub, action, None, common, help=text).add_argument("task_id", help="the task id")
    fork = add_command(
        tsub, "fork", None, common, help="start a copy of a task that reuses its steps before --start-step"
    )
    fork.add_argument("task_id", help="the task id")
    fork.add_argument("--start-step", type=int, default=1, help="the first step to run again (1-based)")


def _add_queue_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    queue = add_command(
        sub, "queue", _queue, common, help="list queues, change their flow control, pause and resume them"
    )
    queue.add_argument("--database-url", help=URL_HELP)
    queue.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    qsub = queue.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_command(
        qsub, "list", None, common, help="queues: waiting and running counts, oldest waiting age, limits"
    )
    qset = add_command(qsub, "set", None, common, help="change settings; running workers pick them up")
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
    pause = add_command(
        qsub, "pause", None, common, help="stop workers from claiming the queue's tasks (running ones go on)"
    )
    pause.add_argument("name", help="the queue")
    resume = add_command(qsub, "resume", None, common, help="let workers claim from a paused queue again")
    resume.add_argument("name", help="the queue")


def _tasks(args: argparse.Namespace) -> int:
    with closing(command_manager(args)) as manager:
        return run_tasks(manager, args)


def _queue(args: argparse.Namespace) -> int:
    with closing(command_manager(args)) as manager:
        return run_queue(manager, args)


def _demo(args: argparse.Namespace) -> int:
    from pgtasks.demo import run_demo

    return run_demo(args.database_url or "sqlite:///pgtasks-demo.sqlite3", args.tasks)
