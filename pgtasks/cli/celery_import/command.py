"""``pgtasks import-celery``: move the messages waiting in a Celery deployment's Redis broker into
pgtasks (see :mod:`pgtasks.cli.celery_import.messages` and the cut-over guide in
docs/celery-migration.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pgtasks.cli.celery_import.messages import import_from_redis
from pgtasks.cli.celery_import.redis_wire import RedisError
from pgtasks.cli.database import URL_HELP, configured_url
from pgtasks.cli.loader import load_app
from pgtasks.cli.options import add_command, comma_list
from pgtasks.compat.celery.app.base import Celery
from pgtasks.sysdb.urls import redact_url


def add_import_celery_command(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``import-celery`` on the main parser's subcommands (``parents``: the global
    options without ``-b/--broker``, as ``--broker`` here is the Celery broker to read)."""
    command = add_command(
        sub,
        "import-celery",
        run,
        parents,
        help="move the tasks waiting in a Celery Redis broker into pgtasks (idempotent)",
        description=(
            "Reads the messages of Celery's protocol waiting in the broker's queues, sends each as "
            "the pgtasks task it describes (same id) and removes it from Redis once committed. "
            "Stop the Celery workers first (a warm shutdown gives their reserved messages back)."
        ),
    )
    command.add_argument("--broker", required=True, help="redis://[:password@]host:6379/0 (or rediss://)")
    command.add_argument("-Q", "--queues", default="celery", help="comma-separated queues (default celery)")
    command.add_argument(
        "--unacked",
        action="store_true",
        help="also the messages stopped workers had reserved and not given back (ETA tasks); "
        "only once no Celery worker runs",
    )
    command.add_argument("--dry-run", action="store_true", help="say what would move; change nothing")
    command.add_argument("--database-url", help=f"{URL_HELP} (a schema: ?schema=name)")


def run(args: argparse.Namespace) -> int:
    queues = comma_list(args.queues)
    if not queues:
        print("pgtasks import-celery: --queues names no queue")
        return 2
    app = _celery_app(args)
    try:
        report = import_from_redis(app, args.broker, queues, unacked=args.unacked, dry_run=args.dry_run)
    except RedisError as exc:
        print(f"pgtasks import-celery: {redact_url(args.broker)}: {exc}")
        return 1
    finally:
        app.close()
    verb = "would import" if args.dry_run else "imported"
    source = f"{redact_url(args.broker)} ({', '.join(queues)})"
    print(f"{verb} {_count(len(report.imported), 'task')} from {source}")
    if report.existed:
        print(f"{_count(len(report.existed), 'task')} in pgtasks already (not sent again)")
    if not args.dry_run:
        print(f"removed {_count(report.removed, 'message')} from the broker")
    for what, why in report.left:
        print(f"left in the broker: {what}: {why}")
    return 0


def _celery_app(args: argparse.Namespace) -> Celery:
    """The Celery app that sends the imported tasks (its routes and settings apply): the one
    ``-A`` names, else one on the database the flags name."""
    if args.app:
        loaded = load_app(args.app)
        if isinstance(loaded, Celery):
            return loaded
        return Celery("import-celery", broker=loaded.settings.database_url)
    return Celery("import-celery", broker=configured_url(args.database_url))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
