"""Celery's commands on pgtasks: ``celery-check``, ``inspect``, ``purge``, ``status``,
``result`` and ``call``, answered from the database (see :mod:`pgtasks.compat.celery.app.control`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pgtasks.cli.loader import load_app
from pgtasks.cli.workers import native_inspect, native_status, print_replies
from pgtasks.compat.bridge.check import UNSUPPORTED, check_app, report
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.engine.errors import ConfigurationError

INSPECT_METHODS = (
    "ping",
    "active",
    "scheduled",
    "reserved",
    "registered",
    "stats",
    "revoked",
    "active_queues",
    "query_task",
    "report",
    "conf",
    "clock",
)


NATIVE_COMMANDS = {"inspect": native_inspect, "status": native_status}


def _load(args: argparse.Namespace) -> Any:
    spec = getattr(args, "sub_app", None) or args.app
    if not spec:
        raise ConfigurationError(f"pgtasks {args.command}: -A/--app is required")
    app = load_app(spec)
    if not isinstance(app, Celery) and args.command not in NATIVE_COMMANDS:
        raise ConfigurationError(
            f"pgtasks {args.command}: -A {spec} is a pgtasks App, and `{args.command}` needs a Celery "
            "app; for a pgtasks App use `pgtasks tasks` and `pgtasks queue` (see `pgtasks --help`)"
        )
    return app


def run(args: argparse.Namespace) -> int:
    """Run the parsed command; 0 on success."""
    try:
        app = _load(args)
    except ImproperlyConfigured as exc:
        print(f"pgtasks {args.command}: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        if args.command == "celery-check" and _celery_name(exc.name):
            # The app imports a Celery or kombu module pgtasks does not serve: that is the
            # finding, reported like the others, not a crash.
            print(f"unsupported  import {exc.name}: {exc.msg}")
            print("1 unsupported: the app cannot be loaded until this import is removed or replaced")
            return 1
        raise
    if not isinstance(app, Celery):  # a native App: answered through the management API
        return NATIVE_COMMANDS[args.command](app, args)
    command = args.command.replace("-", "_")
    handler = globals()[f"_{command}"]
    return int(handler(app, args))


def _celery_name(name: str | None) -> bool:
    return bool(name) and str(name).split(".")[0] in ("celery", "kombu")


def _celery_check(app: Any, args: argparse.Namespace) -> int:
    findings = check_app(app)
    print(report(findings))
    return 1 if any(f.status == UNSUPPORTED for f in findings) else 0


def _inspect(app: Any, args: argparse.Namespace) -> int:
    if args.method not in INSPECT_METHODS:
        print(
            f"pgtasks inspect: unknown method {args.method!r}; one of {', '.join(INSPECT_METHODS)}",
            file=sys.stderr,
        )
        return 2
    inspector = app.control.inspect(destination=args.destination.split(",") if args.destination else None)
    method = getattr(inspector, args.method)
    replies = method(*args.ids) if args.method == "query_task" else method()
    return print_replies(replies, args.json)


def _status(app: Any, args: argparse.Namespace) -> int:
    nodes = app.control.inspect().nodes()
    if not nodes:
        print("Error: No nodes replied within time constraint", file=sys.stderr)
        return 1
    for node in nodes:
        print(f"{node}: OK")
    print(f"\n{len(nodes)} node{'s' if len(nodes) != 1 else ''} online.")
    return 0


def _purge(app: Any, args: argparse.Namespace) -> int:
    queues = [q.strip() for q in (args.queues or "").split(",") if q.strip()]
    where = f"the queues {', '.join(queues)}" if queues else "all known task queues"
    if not args.force:
        answer = (
            input(
                "WARNING: This will remove all waiting tasks. There is no undo for this operation!\n"
                "Are you sure you want to delete all tasks (yes/NO)? "
            )
            if sys.stdin.isatty()
            else ""
        )
        if answer.strip().lower() not in ("y", "yes"):
            print("purge: aborted (to skip this prompt use the -f option)")
            return 1
    count = app.control.purge(queues=queues or None)
    print(f"Purged {count} message{'s' if count != 1 else ''} from {where}.")
    return 0


def _result(app: Any, args: argparse.Namespace) -> int:
    result = app.AsyncResult(args.task_id)
    if not result.exists:
        print(f"no task with id {args.task_id!r}", file=sys.stderr)
        return 1
    state = result.state
    if args.traceback:
        print(result.traceback or "")
    elif state == "SUCCESS":
        print(result.result)
    else:
        value = result.result
        print(repr(value) if isinstance(value, BaseException) else (state if value is None else value))
    return 0


def _call(app: Any, args: argparse.Namespace) -> int:
    import datetime as dt

    try:
        call_args, call_kwargs = json.loads(args.args), json.loads(args.kwargs)
    except ValueError as exc:
        raise ConfigurationError(f"pgtasks call: --args/--kwargs must be JSON: {exc}") from None
    if not isinstance(call_args, list) or not isinstance(call_kwargs, dict):
        raise ConfigurationError("pgtasks call: --args takes a JSON list and --kwargs a JSON object")
    options: dict[str, Any] = {}
    if args.queue:
        options["queue"] = args.queue
    if args.countdown is not None:
        options["countdown"] = args.countdown
    if args.eta:
        options["eta"] = dt.datetime.fromisoformat(args.eta)
    if args.expires:
        try:
            options["expires"] = float(args.expires)
        except ValueError:
            options["expires"] = dt.datetime.fromisoformat(args.expires)
    print(app.send_task(args.name, call_args, call_kwargs, **options).id)
    return 0
