"""``pgtasks -A proj control COMMAND [ARGS]`` (and ``celery -A proj control ...``): Celery's
remote control commands from the command line, sent through ``app.control`` and printed as
Celery prints them (``-j`` for JSON, ``-d`` for some workers, ``--list`` for the commands).

Most commands are rows every live worker reads and answers (see
:mod:`pgtasks.compat.celery.app.control`). ``revoke``, ``terminate`` and
``revoke_by_stamped_headers`` act on the database itself, so they take effect even when no
worker is alive (the command then says so instead of Celery's "no nodes replied"); each live
worker's reply is Celery's text.
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pgtasks.cli.options import comma_list, quiet
from pgtasks.cli.replies import print_command_replies
from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.records import Status


@dataclass(frozen=True)
class ControlCommand:
    """A remote control command as Celery lists it: its arguments (name, type) in order, the
    name its extra arguments go to, and how many arguments it needs at least."""

    signature: str
    help: str
    args: tuple[tuple[str, Callable[[str], Any]], ...] = ()
    variadic: str | None = None
    required: int = 0
    defaults: dict[str, Any] = field(default_factory=dict)


COMMANDS: dict[str, ControlCommand] = {
    "add_consumer": ControlCommand(
        "<queue> [exchange [type [routing_key]]]",
        "Tell worker(s) to consume from task queue by name.",
        (("queue", str), ("exchange", str), ("exchange_type", str), ("routing_key", str)),
        required=1,
    ),
    "autoscale": ControlCommand("[max [min]]", "Modify autoscale settings.", (("max", int), ("min", int))),
    "cancel_consumer": ControlCommand(
        "<queue>", "Tell worker(s) to stop consuming from task queue by name.", (("queue", str),), required=1
    ),
    "disable_events": ControlCommand("", "Tell worker(s) to stop sending task-related events."),
    "election": ControlCommand("", "Hold election."),
    "enable_events": ControlCommand("", "Tell worker(s) to send task-related events."),
    "heartbeat": ControlCommand("", "Tell worker(s) to send event heartbeat immediately."),
    "pool_grow": ControlCommand(
        "[N=1]", "Grow pool by n processes/threads.", (("n", int),), defaults={"n": 1}
    ),
    "pool_restart": ControlCommand("", "Restart execution pool."),
    "pool_shrink": ControlCommand(
        "[N=1]", "Shrink pool by n processes/threads.", (("n", int),), defaults={"n": 1}
    ),
    "rate_limit": ControlCommand(
        "<task_name> <rate_limit (e.g., 5/s | 5/m | 5/h)>",
        "Tell worker(s) to modify the rate limit for a task by type.",
        (("task_name", str), ("rate_limit", str)),
        required=2,
    ),
    "revoke": ControlCommand(
        "[id1 [id2 [... [idN]]]]", "Revoke task by task id (or list of ids).", variadic="task_id", required=1
    ),
    "revoke_by_stamped_headers": ControlCommand(
        "[key1=value1 [key2=value2 [... [keyN=valueN]]]]",
        "Revoke task by header (or list of headers).",
        variadic="headers",
        required=1,
    ),
    "shutdown": ControlCommand("", "Shutdown worker(s)."),
    "terminate": ControlCommand(
        "<signal> [id1 [id2 [... [idN]]]]",
        "Terminate task by task id (or list of ids).",
        (("signal", str),),
        variadic="task_id",
        required=2,
    ),
    "time_limit": ControlCommand(
        "<task_name> <soft_secs> [hard_secs]",
        "Tell worker(s) to modify the time limit for task by type.",
        (("task_name", str), ("soft", float), ("hard", float)),
        required=2,
    ),
}
TYPE_NAMES: dict[Callable[[str], Any], str] = {int: "an integer", float: "a number", str: "a text"}


def add_control_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``control`` command's arguments, as Celery's."""
    parser.add_argument("control", nargs="?", metavar="COMMAND", help="the command (see --list)")
    parser.add_argument("arguments", nargs="*", metavar="ARGS", help="the command's arguments")
    parser.add_argument("--list", action="store_true", help="list the control commands and exit")
    parser.add_argument("-t", "--timeout", type=float, default=1.0, help="seconds to wait for replies")
    parser.add_argument("-d", "--destination", help="comma-separated worker names (default: all)")
    parser.add_argument("-j", "--json", action="store_true", help="print the replies as JSON")


def custom_commands(kind: str) -> dict[str, ControlCommand]:
    """The application's own commands of ``kind`` (``control`` or ``inspect``, registered with
    Celery's ``@control_command`` / ``@inspect_command``), those pgtasks has none of by that
    name; their words are converted by the types they declare, none required (as Celery)."""
    # why: the Celery layer, for the commands of a Celery app only
    from pgtasks.compat.celery.worker.control import registered

    return {
        name: ControlCommand(meta.signature or "", meta.help or "", tuple(meta.args or ()), meta.variadic)
        for name, meta in registered(kind).items()
        if name not in COMMANDS
    }


def command_listing() -> str:
    """``control --list``: each command with its arguments and what it does."""
    commands = {**COMMANDS, **custom_commands("control")}
    return format_listing("Control", ((name, c.signature, c.help) for name, c in commands.items()))


def format_listing(kind: str, rows: Iterable[tuple[str, str, str]]) -> str:
    """Commands (name, signature, what it does) in the layout of Celery's ``--list``."""
    lines = [f"{kind} Commands:"]
    for name, signature, text in rows:
        head = f"  {name} {signature}".rstrip()
        lines.append(f"{head:<34}{text}" if len(head) < 34 else f"{head}\n{'':<34}{text}")
    return "\n".join(lines)


def compile_arguments(
    name: str, given: Sequence[str], command: ControlCommand | None = None
) -> dict[str, Any]:
    """The keyword arguments of command ``name`` (``command``: an application's own) from its
    command-line words, converted as Celery converts them; ConfigurationError saying what is
    wrong."""
    command = command or COMMANDS[name]
    usage = f"{name} {command.signature}".rstrip()
    if len(given) < command.required:
        raise ConfigurationError(f"pgtasks control {name}: missing arguments; usage: {usage}")
    if len(given) > len(command.args) and command.variadic is None:
        raise ConfigurationError(f"pgtasks control {name}: too many arguments; usage: {usage}")
    arguments: dict[str, Any] = dict(command.defaults)
    for (key, kind), word in zip(command.args, given, strict=False):
        try:
            arguments[key] = word if kind is None else kind(word)
        except (TypeError, ValueError):
            what = TYPE_NAMES.get(kind, f"what {getattr(kind, '__name__', kind)} reads")
            raise ConfigurationError(
                f"pgtasks control {name}: {key} must be {what}, not {word!r}; usage: {usage}"
            ) from None
    if command.variadic is not None:
        arguments[command.variadic] = list(given[len(command.args) :])
    return arguments


def run_control(app: Any, args: argparse.Namespace) -> int:
    """``control`` for a Celery app: 0 when a worker replied (or a revoke was stored)."""
    if args.list:
        print(command_listing())
        return 0
    name = args.control
    commands = {**COMMANDS, **custom_commands("control")}
    if name is None:
        raise ConfigurationError(f"pgtasks control: a command is required; one of {', '.join(commands)}")
    if name not in commands:
        raise ConfigurationError(
            f"pgtasks control: command {name!r} not recognized; available control commands: "
            f"{', '.join(commands)}"
        )
    arguments = compile_arguments(name, args.arguments, commands[name])
    # Refused before anything is sent: a signal or header the command cannot use.
    if name == "terminate":
        arguments["signal"] = _signal_name(arguments["signal"])
    if name == "revoke_by_stamped_headers":
        arguments["headers"] = _headers(arguments["headers"])
    destination = comma_list(args.destination) or None
    if name in ("revoke", "terminate"):
        return _revoke(app, name, arguments, destination, args)
    if name == "revoke_by_stamped_headers":
        headers = arguments["headers"]
        replies = app.control.revoke_by_stamped_headers(headers, destination=destination, reply=True)
        return _stored(replies, f"headers {headers} flagged as revoked", args)
    replies = app.control.broadcast(
        name, arguments, destination=destination, reply=True, timeout=args.timeout
    )
    return print_command_replies(replies, args.json, quiet(args))


def _revoke(
    app: Any, name: str, arguments: dict[str, Any], destination: list[str] | None, args: argparse.Namespace
) -> int:
    ids: list[str] = list(dict.fromkeys(arguments["task_id"]))
    terminate = name == "terminate"
    signal_name = arguments["signal"] if terminate else None
    running: dict[str, list[str]] = {}  # node: the tasks among ``ids`` it runs
    for task_id in ids if terminate else ():
        task = app.get_task(task_id, steps=False)
        if task is not None and task.status is Status.PENDING and task.executor_id:
            running.setdefault(task.executor_id, []).append(task_id)
    app.control.revoke(ids, terminate=terminate, signal=signal_name)
    nodes = app.control.inspect(destination=destination).nodes()
    text = f"tasks {_set_text(ids)} flagged as revoked"
    if not terminate:
        return _stored([{node: {"ok": text}} for node in nodes], text, args)
    terminated = {node: ", ".join(running.get(node, ())) or "tasks unknown" for node in nodes}
    replies = [{node: {"ok": f"terminate: {ids_text}"}} for node, ids_text in terminated.items()]
    return _stored(replies, text, args)


def _stored(replies: list[dict[str, Any]] | None, text: str, args: argparse.Namespace) -> int:
    """Print the replies of a command that acted on the database; without a live worker, say
    that it is stored all the same (exit 0: it took effect)."""
    if replies:
        return print_command_replies(replies, args.json, quiet(args))
    if args.json:
        print("[]")
    else:
        print(f"{text} (no worker is alive: it is kept in the database and every worker honours it)")
    return 0


def _set_text(ids: Sequence[str]) -> str:
    """The ids as Celery's reply shows them (a Python set), in the order given."""
    return "{" + ", ".join(repr(one) for one in ids) + "}"


def _headers(words: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals or not key:
            raise ConfigurationError(f"pgtasks control revoke_by_stamped_headers: {word!r} is not key=value")
        headers[key] = value
    return headers


def _signal_name(word: str) -> str:
    """A signal given as Celery takes it (``KILL``, ``SIGKILL``, ``9``), as its name."""
    text = word.strip().upper()
    try:
        number = int(text)
    except ValueError:
        name = text if text.startswith("SIG") else f"SIG{text}"
        if name in signal.Signals.__members__:
            return name
    else:
        try:
            return signal.Signals(number).name
        except ValueError:
            pass
    raise ConfigurationError(f"pgtasks control terminate: unknown signal {word!r} (e.g. TERM, KILL, 9)")
