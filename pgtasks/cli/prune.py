"""``pgtasks prune``: delete finished tasks past ``result_expires`` now (workers also do it
every minute), or show with ``--dry-run`` what would go."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from contextlib import closing
from typing import Any

from pgtasks.cli.database import SCHEMA_HELP, URL_HELP, command_manager
from pgtasks.cli.options import add_command
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.options import MAX_DELAY_SECONDS
from pgtasks.management import TaskManagement


def add_prune_command(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``prune`` on the main parser's subcommands."""
    prune = add_command(
        sub,
        "prune",
        run_prune,
        parents,
        help="delete finished tasks older than result_expires (or --older-than), in small batches",
        description="Unfinished tasks, dead letters and tasks a waiting canvas still needs are kept.",
    )
    prune.add_argument(
        "--older-than", type=float, help="seconds since they finished (default: result_expires)"
    )
    prune.add_argument("--queue", help="only this queue")
    prune.add_argument("--dry-run", action="store_true", help="count what would be deleted; delete nothing")
    prune.add_argument("--database-url", help=URL_HELP)
    prune.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)


def run_prune(args: argparse.Namespace) -> int:
    """On -A's app's database, else on the one the flags name."""
    with closing(command_manager(args)) as manager:
        return _prune(manager, args)


def _prune(manager: TaskManagement, args: argparse.Namespace) -> int:
    if args.older_than is not None and not 0 <= args.older_than <= MAX_DELAY_SECONDS:  # a century
        raise ConfigurationError(f"--older-than must be seconds from 0 to a century, not {args.older_than}")
    if args.older_than is None and manager.engine.settings.result_expires is None:
        print("result_expires is None: finished tasks are kept (give --older-than to prune anyway)")
        return 0
    counts = manager.prune_tasks(args.older_than, args.queue, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    for queue, n in sorted(counts.items()):
        print(f"{queue}: {n}")
    print(f"{verb} {sum(counts.values())} finished tasks")
    return 0
