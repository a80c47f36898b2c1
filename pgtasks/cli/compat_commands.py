"""Celery's commands on pgtasks: ``celery-check``, ``inspect``, ``control``, ``purge``,
``status``, ``result`` and ``call``, answered from the database (see
:mod:`pgtasks.compat.celery.app.control`);
``inspect`` and ``status`` answer for a pgtasks App too (:mod:`pgtasks.cli.workers`).
(``worker`` and ``beat`` are pgtasks' own commands, which run a Celery app as well.)"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from pgtasks.cli.control_command import (
    ControlCommand,
    add_control_arguments,
    compile_arguments,
    custom_commands,
    format_listing,
    run_control,
)
from pgtasks.cli.loader import load_app
from pgtasks.cli.options import add_command, comma_list, quiet
from pgtasks.cli.replies import print_replies, print_status
from pgtasks.cli.workers import native_inspect, native_status
from pgtasks.compat.bridge.check import UNSUPPORTED, check_app, report
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.compat.celery.utils.serialization import strtobool
from pgtasks.engine.errors import ConfigurationError

# Celery's inspect commands pgtasks answers: their arguments and what they list.
INSPECT_COMMANDS = {
    "active": ("", "List of tasks currently being executed."),
    "active_queues": ("", "List the task queues a worker is currently consuming from."),
    "clock": ("", "Get current logical clock value."),
    "conf": ("[include_defaults=False]", "List configuration."),
    "ping": ("", "Ping worker(s)."),
    "query_task": ("[id1 [id2 [... [idN]]]]", "Query for task information by id."),
    "registered": ("[attr1 [attr2 [... [attrN]]]]", "List of registered tasks."),
    "report": ("", "Information about Celery installation for bug reports."),
    "reserved": ("", "List of currently reserved tasks, not including scheduled/active."),
    "revoked": ("", "List of revoked task-ids."),
    "scheduled": ("", "List of currently scheduled ETA/countdown tasks."),
    "stats": ("", "Request worker statistics/information."),
}
INSPECT_METHODS = tuple(INSPECT_COMMANDS)
# Celery's memory-debugging inspect commands, which need Celery's worker internals.
INSPECT_MEMORY = ("memdump", "memsample", "objgraph")
# A command's function for a Celery app, and for a pgtasks App (None: it needs a Celery app).
Handler = Callable[[Any, argparse.Namespace], int]


def add_compat_commands(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register Celery's commands on the main parser's subcommands."""
    add_command(
        sub,
        "celery-check",
        partial(run, _celery_check, None),
        parents,
        help="list the Celery settings and features of a Celery app that pgtasks ignores or lacks",
        description="Exit 1 when the app uses something pgtasks does not support.",
    )
    inspect = add_command(
        sub,
        "inspect",
        partial(run, _inspect, native_inspect),
        parents,
        help="ask the live workers: ping, active, scheduled, registered, stats, ...",
        description="Answered from the database (worker heartbeats and running tasks). Exit 0 when "
        "at least one worker replies, 69 when none does (Celery's EX_UNAVAILABLE; a Kubernetes probe "
        "can run `inspect ping`).",
    )
    inspect.add_argument("method", nargs="?", help="ping, active, registered, stats, ... (see --list)")
    inspect.add_argument("--list", action="store_true", help="list the inspect commands and exit")
    inspect.add_argument(
        "ids", nargs="*", help="task ids (query_task), or the task attributes to show (registered rate_limit)"
    )
    inspect.add_argument("-d", "--destination", help="comma-separated worker names to ask (default: all)")
    inspect.add_argument(
        "-t", "--timeout", type=float, default=1.0, help="accepted for Celery; replies are immediate"
    )
    inspect.add_argument("-j", "--json", action="store_true", help="print the replies as one JSON object")
    purge = add_command(
        sub, "purge", partial(run, _purge, None), parents, help="discard every waiting task (of some queues)"
    )
    purge.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")
    purge.add_argument("-Q", "--queues", help="comma-separated queues (default: all)")
    purge.add_argument("-X", "--exclude-queues", help="comma-separated queues not to purge")
    control = add_command(
        sub,
        "control",
        partial(run, run_control, None),
        parents,
        help="send a remote control command to the workers: shutdown, add_consumer, revoke, ...",
        description="Sent through the database to every live worker (or those of -d), which answer "
        "it. Exit 0 when a worker replied, 69 when none did; revoke and terminate are stored even "
        "when no worker is alive.",
    )
    add_control_arguments(control)
    status = add_command(
        sub,
        "status",
        partial(run, _status, native_status),
        parents,
        help="list the live workers (exit 69 when none is alive)",
        description="A worker is alive while its heartbeat is within its lease.",
    )
    status.add_argument("-j", "--json", action="store_true", help="print the workers as JSON")
    status.add_argument("-d", "--destination", help="comma-separated worker names to ask (default: all)")
    status.add_argument(
        "-t", "--timeout", type=float, default=1.0, help="accepted for Celery; replies are immediate"
    )
    result = add_command(
        sub,
        "result",
        partial(run, _result, None),
        parents,
        help="wait for a task and print its result",
        description="Waits until the task is ready (no timeout, as Celery's) and prints its value. "
        "A failed or revoked task prints its exception (the worker's traceback) and exits 1; an id "
        "no task has exits 1 at once.",
    )
    result.add_argument("task_id", help="the task id")
    result.add_argument(
        "--traceback", action="store_true", help="print the traceback of a failed task instead"
    )
    result.add_argument("-t", "--task", help="accepted for Celery; the name is read from the task")
    call = add_command(
        sub, "call", partial(run, _call, None), parents, help="send a task by name and print its id"
    )
    call.add_argument("name", help="the registered task name")
    call.add_argument("-a", "--args", default="[]", help="positional arguments as a JSON list")
    call.add_argument("-k", "--kwargs", default="{}", help="keyword arguments as a JSON object")
    call.add_argument("--queue", help="the queue (default: the task's)")
    call.add_argument("--countdown", type=float, help="run no sooner than S seconds from now")
    call.add_argument("--eta", help="run no sooner than this ISO 8601 time")
    call.add_argument("--expires", help="seconds, or an ISO 8601 time, after which the task is dropped")
    call.add_argument(
        "--serializer",
        help="accepted for Celery if it names the app's task_serializer, which encodes the arguments",
    )
    call.add_argument("--exchange", help="accepted for Celery; queues are names here")
    call.add_argument("--routing-key", help="accepted for Celery; queues are names here")


# The commands Celery's default app serves when no -A is given: ``celery -b URL status``
# asks the workers of the broker ``-b`` names (a health check needs no project code).
WITHOUT_APP = ("status", "inspect", "control", "purge", "result", "call")


def _load(args: argparse.Namespace, native: Handler | None) -> Any:
    if not args.app:
        broker = getattr(args, "broker_url", None)
        if broker and args.command in WITHOUT_APP:
            return Celery(broker=broker)
        needed = "-A/--app (or -b URL) is required" if args.command in WITHOUT_APP else "-A/--app is required"
        raise ConfigurationError(f"pgtasks {args.command}: {needed}")
    app = load_app(args.app)
    if not isinstance(app, Celery) and native is None:
        raise ConfigurationError(
            f"pgtasks {args.command}: -A {args.app} is a pgtasks App, and `{args.command}` needs a "
            "Celery app; for a pgtasks App use `pgtasks tasks` and `pgtasks queue` (see `pgtasks --help`)"
        )
    return app


def run(handler: Handler, native: Handler | None, args: argparse.Namespace) -> int:
    """Run a command of -A's app: ``handler`` for a Celery app, ``native`` (through the
    management API) for a pgtasks App; 0 on success."""
    if getattr(args, "list", False):  # --list needs no app
        return handler(None, args)
    try:
        app = _load(args, native)
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
    if isinstance(app, Celery):
        return handler(app, args)
    assert native is not None  # _load refused the others
    return native(app, args)


def _celery_name(name: str | None) -> bool:
    return bool(name) and str(name).split(".")[0] in ("celery", "kombu")


def _celery_check(app: Any, args: argparse.Namespace) -> int:
    findings = check_app(app)
    print(report(findings))
    return 1 if any(f.status == UNSUPPORTED for f in findings) else 0


def _inspect(app: Any, args: argparse.Namespace) -> int:
    if args.list:
        print(inspect_listing())
        return 0
    if args.method in INSPECT_MEMORY:
        print(
            f"pgtasks inspect: {args.method} is not available: it samples Celery's worker internals "
            "(pgtasks workers report their memory in `inspect stats`)",
            file=sys.stderr,
        )
        return 2
    custom = _custom_inspect()
    if args.method in custom:  # the application's own (@inspect_command): asked of each worker
        arguments = compile_arguments(args.method, args.ids, custom[args.method])
        destination = comma_list(args.destination) or None
        answers = app.control.broadcast(
            args.method, arguments, destination=destination, reply=True, timeout=args.timeout
        )
        replies = {node: reply for one in answers or () for node, reply in one.items()}
        return print_replies(replies, args.json, quiet(args))
    if args.method not in INSPECT_METHODS:
        known = ", ".join((*INSPECT_METHODS, *custom))
        what = "a command is required" if args.method is None else f"unknown method {args.method!r}"
        print(f"pgtasks inspect: {what}; one of {known}", file=sys.stderr)
        return 2
    inspector = app.control.inspect(destination=comma_list(args.destination) or None)
    method = getattr(inspector, args.method)
    if args.method in ("query_task", "registered"):
        replies = method(*args.ids)
    elif args.method == "conf" and args.ids:  # [include_defaults=False], a yes/no word as Celery's
        replies = method(with_defaults=_yes_or_no(args.ids[0]))
    else:
        replies = method()
    return print_replies(replies, args.json, quiet(args))


def _yes_or_no(word: str) -> bool:
    """``inspect conf``'s word, read by Celery's own ``strtobool`` as Celery's command does."""
    try:
        return strtobool(word.strip())
    except TypeError:
        raise ConfigurationError(
            f"pgtasks inspect conf: include_defaults is yes or no (true/false), not {word!r}"
        ) from None


def inspect_listing() -> str:
    """``inspect --list``: each command with its arguments and what it lists (the application's
    own after pgtasks')."""
    rows = [(name, sig, text) for name, (sig, text) in INSPECT_COMMANDS.items()]
    rows += [(name, c.signature, c.help) for name, c in _custom_inspect().items()]
    return format_listing("Inspect", rows)


def _custom_inspect() -> dict[str, ControlCommand]:
    """The application's own inspect commands pgtasks answers none of by that name."""
    return {name: c for name, c in custom_commands("inspect").items() if name not in INSPECT_COMMANDS}


def _status(app: Any, args: argparse.Namespace) -> int:
    nodes = app.control.inspect(destination=comma_list(args.destination) or None).nodes()
    return print_status({node: {"ok": "pong"} for node in nodes}, args.json, quiet(args))


def _purge(app: Any, args: argparse.Namespace) -> int:
    """Celery's ``purge``: the waiting tasks of ``-Q``'s queues (default: every queue the
    database knows), less ``-X``'s, are revoked; nothing to purge is not an error."""
    chosen, excluded = set(comma_list(args.queues)), set(comma_list(args.exclude_queues))
    names = sorted((chosen or _known_queues(app)) - excluded)
    if not names:
        return 0  # as Celery: -X left no queue, nothing is asked or printed
    headline = f"{len(names)} queue{'s' if len(names) != 1 else ''}"
    if not args.force and not _confirmed(
        f"WARNING: This will remove all tasks from {headline}: {', '.join(names)}.\n"
        "         There is no undo for this operation!\n\n"
        "(to skip this prompt use the -f option)\n"
        "Are you sure you want to delete all tasks? [y/N]: "
    ):
        print("Aborted!", file=sys.stderr)
        return 1
    # Without -Q or -X every waiting task goes, in whichever queue it waits.
    count = app.control.purge(queues=names if chosen or excluded else None)
    if count:
        noun = "queue" if len(names) == 1 else "queues"
        print(f"Purged {count} message{'s' if count != 1 else ''} from {len(names)} known task {noun}.")
    else:
        print(f"No messages purged from {headline}.")
    return 0


def _confirmed(question: str) -> bool:
    """Ask ``question`` and read the answer from standard input, a terminal or not (``echo y |
    celery purge``), as Celery's click prompt reads it: y or yes in any case; anything else, or
    no input at all, is no."""
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _known_queues(app: Any) -> set[str]:
    """The queues the database knows: those with unfinished tasks, those with settings, and
    the app's declared queues (Celery's ``app.amqp.queues``)."""
    return {queue.name for queue in app.list_queues()} | set(app.amqp.queues.keys())


def _result(app: Any, args: argparse.Namespace) -> int:
    """Celery's ``result``: wait for the task as ``get()`` does (no timeout, as Celery's) and
    print its value; a failed or revoked task prints its exception (the worker's traceback when
    there is one) and exits 1. Unlike Celery, an id no task has is said at once (exit 1)."""
    result = app.AsyncResult(args.task_id)
    if not result.exists:
        print(f"no task with id {args.task_id!r}", file=sys.stderr)
        return 1
    if args.traceback:
        print(result.traceback or "")
        return 0
    try:
        value = result.get()
    except KeyboardInterrupt:  # the only way out of a wait without a timeout
        print("Aborted!", file=sys.stderr)
        return 1
    except Exception as exc:
        print((result.traceback or exception_line(exc)).rstrip("\n"), file=sys.stderr)
        return 1
    print(value)
    return 0


def exception_line(exc: BaseException) -> str:
    """``module.Type: text``, the last line of a traceback, with the Celery layer's classes
    under the names Celery users know (``celery.exceptions.TaskRevokedError: revoked``)."""
    kind = type(exc)
    module = kind.__module__.removeprefix("pgtasks.compat.")
    name = kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    return f"{name}: {exc}" if str(exc) else name


def _call(app: Any, args: argparse.Namespace) -> int:
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
        options["eta"] = args.eta  # an ISO 8601 string: checked by the send (publishing.prepare)
    for option in ("serializer", "exchange", "routing_key"):
        if getattr(args, option):
            options[option] = getattr(args, option)
    if args.expires:
        try:
            options["expires"] = float(args.expires)
        except ValueError:
            options["expires"] = args.expires
    print(app.send_task(args.name, call_args, call_kwargs, **options).id)
    return 0
