"""``pgtasks health --file PATH --max-age N``: the exec probe that reads the file a worker
started with ``--health-file PATH`` renews while its heartbeat is fresh. Exit 0 when the file
was renewed within N seconds, 1 otherwise (with the reason on stderr)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pgtasks.cli.options import add_command


def add_health_command(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``health`` on the main parser's subcommands."""
    health = add_command(
        sub,
        "health",
        run_health,
        parents,
        help="check a worker's --health-file (a liveness probe: exit 0 alive, 1 not)",
        description="Exit 0 when the worker renewed the file within --max-age seconds.",
    )
    health.add_argument("--file", required=True, type=Path, help="the path given to worker --health-file")
    health.add_argument(
        "--max-age",
        type=float,
        default=60.0,
        help="seconds since the last renewal after which the worker counts as dead (default 60)",
    )


def run_health(args: argparse.Namespace) -> int:
    """Check the file; print why it fails."""
    if args.max_age <= 0:
        print(f"pgtasks health: --max-age must be positive, not {args.max_age:g}", file=sys.stderr)
        return 2
    try:
        renewed = args.file.stat().st_mtime
    except FileNotFoundError:
        print(f"pgtasks health: {args.file} does not exist: no worker is alive with it", file=sys.stderr)
        return 1
    age = time.time() - renewed
    if age > args.max_age:
        print(
            f"pgtasks health: {args.file} was renewed {age:.1f}s ago (more than {args.max_age:g}s): "
            "the worker's heartbeat is not fresh",
            file=sys.stderr,
        )
        return 1
    print(f"ok: renewed {max(age, 0.0):.1f}s ago")
    return 0
