"""``pgtasks dashboard``: the web dashboard, Flower's REST API and ``/metrics``, served for an
app (``-A``) or for the database ``--database-url`` names. ``pgtasks flower`` starts the same
server with Flower's command line (:mod:`pgtasks.cli.flower_command`)."""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from pgtasks.cli.database import SCHEMA_HELP, command_manager
from pgtasks.cli.options import add_command, port
from pgtasks.engine.errors import ConfigurationError


def add_dashboard_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """Register ``dashboard`` under ``sub``."""
    board = add_command(
        sub, "dashboard", _dashboard, common, help="serve the web dashboard, Flower's REST API and /metrics"
    )
    board.add_argument("--address", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    board.add_argument("--port", type=port, default=5555, help="TCP port (default 5555, as Flower)")
    board.add_argument("--basic-auth", help="user:password[,user2:password2]; required off localhost")
    board.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    board.add_argument("--url-prefix", default="", help="serve every path under /PREFIX (behind a proxy)")
    board.add_argument(
        "--allowed-hosts",
        help="host names (comma separated) the dashboard answers for besides 127.0.0.1 and localhost "
        "(behind a proxy; * for any): others are refused, which stops DNS rebinding",
    )
    board.add_argument(
        "--max-tasks",
        type=int,
        default=100_000,
        help="Flower's API lists the newest N tasks and the running ones (default 100000; 0: only "
        "the running ones)",
    )
    board.add_argument("--database-url", help="without -A: the database to show")
    board.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)


def _dashboard(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="[%(asctime)s: %(levelname)s] %(message)s")
    return run_dashboard(
        args,
        address=args.address,
        port=args.port,
        basic_auth=args.basic_auth,
        read_only=args.read_only,
        url_prefix=args.url_prefix,
        allowed_hosts=args.allowed_hosts,
        max_tasks=args.max_tasks,
    )


def run_dashboard(
    args: argparse.Namespace,
    address: str,
    port: int,
    basic_auth: str | list[str] | None,
    read_only: bool,
    url_prefix: str = "",
    allowed_hosts: str | list[str] | None = None,
    max_tasks: int = 100_000,
    buckets: tuple[float, ...] | None = None,
) -> int:
    """Serve the dashboard of ``args.app`` (or of the database ``args.database_url``).
    ``FLOWER_UNAUTHENTICATED_API`` (Flower's words for true) opens the API without credentials."""
    try:
        from pgtasks.dashboard.flower import FlowerSettings
        from pgtasks.dashboard.http import strtobool
        from pgtasks.dashboard.metrics import RUNTIME_BUCKETS
        from pgtasks.dashboard.security import Guard, parse_basic_auth, parse_hosts
        from pgtasks.dashboard.server import serve
    except ImportError as exc:  # the dashboard is an optional extra
        raise ConfigurationError(
            f"the dashboard needs its extra: pip install 'pgtasks[dashboard]' ({exc})"
        ) from None
    if max_tasks < 0:
        raise ConfigurationError(f"--max-tasks must be 0 (only running tasks) or more, not {max_tasks}")
    open_api = os.environ.get("FLOWER_UNAUTHENTICATED_API", "")
    try:
        unauthenticated_api = bool(open_api) and strtobool(open_api)
    except ValueError:
        raise ConfigurationError(
            f"FLOWER_UNAUTHENTICATED_API must be true or false, not {open_api!r}"
        ) from None
    guard = Guard(
        parse_basic_auth(basic_auth),
        read_only=read_only,
        unauthenticated_api=unauthenticated_api,
        address=address,
        allowed_hosts=parse_hosts(allowed_hosts),
    )
    manager = command_manager(args)
    settings = FlowerSettings(max_tasks=max_tasks)
    serve(manager, address, port, guard, settings, url_prefix, buckets or RUNTIME_BUCKETS)
    return 0


__all__ = ["add_dashboard_command", "run_dashboard"]
