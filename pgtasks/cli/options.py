"""The building blocks of the ``pgtasks`` parser, and Celery's command line as options of it.

- :func:`global_options`: Celery's global options (``-A``, ``-b``, ``--workdir``, ``-q``, ...),
  a parent parser of the top-level parser and of every command, so that they are taken before
  or after the command, as Celery takes them.
- :func:`add_command`: a command's parser, with those options and the function that runs it
  (``set_defaults(func=...)``).
- :func:`add_ignored` / :func:`add_refused`: Celery flags that pgtasks accepts without a use
  for them (one warning each), or refuses with the reason.
- :func:`apply_global_options`: what the global options do, once the whole line is parsed.

Parsing changes nothing: an ignored flag is only recorded in the namespace, and ``--workdir``
and ``-b`` act in :func:`apply_global_options`.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.worker.node_paths import UnknownFormat, expand_formats
from pgtasks.worker.pools import DEFAULT_POOL, POOLS

Command = Callable[[argparse.Namespace], int]

NO_USE = "pgtasks has no use for it"
DETACH = "pgtasks runs in the foreground: start it under a supervisor (systemd, Docker, Kubernetes)"
# The namespace attribute of an ignored flag: one per flag, so that a flag given before the
# command and another after it are both kept (argparse copies a command's namespace over the
# top-level one, attribute by attribute).
IGNORED_PREFIX = "ignored:"
GREEN_POOLS = ("eventlet", "gevent")
# The commands whose output Celery's global -q/--quiet changes (the others ignore it, as in
# pgtasks they have nothing to leave out).
QUIET_COMMANDS = frozenset({"status", "inspect", "control"})
# Set in the namespace when -P is given (its default cannot tell).
POOL_GIVEN = "pool_given"
PREFORK_ALIAS = "processes"  # Celery's other name of the prefork pool


class _Ignored(argparse.Action):
    """A Celery flag (with or without a value) that pgtasks accepts and ignores."""

    def __init__(self, option_strings: Sequence[str], dest: str, why: str = NO_USE, **kwargs: Any) -> None:
        super().__init__(option_strings, IGNORED_PREFIX + option_strings[-1], **kwargs)
        self.why = why

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, f"{option_string} ({self.why})")


class _Given(argparse.Action):
    """A flag whose value is the option string given (``-q`` or ``--quiet``), to be named in a
    warning by the commands that ignore it."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, option_string)


class _Refused(argparse.Action):
    """A Celery flag pgtasks refuses: the command stops with the reason (exit status 2)."""

    def __init__(self, option_strings: Sequence[str], dest: str, why: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.why = why

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"{option_string}: {self.why}")


class _Pool(argparse.Action):
    """``-P``: one of :data:`POOLS`, or ``processes`` (Celery's alias of prefork); Celery's
    green-thread pools run on threads, with a warning; ``custom`` is refused (Celery loads the
    class named by CELERY_CUSTOM_WORKER_POOL)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values in GREEN_POOLS:
            why = "green threads are not supported; using -P threads"
            setattr(namespace, IGNORED_PREFIX + "-P", f"{option_string} {values} ({why})")
            values = "threads"
        elif values == PREFORK_ALIAS:
            values = "prefork"
        elif values == "custom":
            raise argparse.ArgumentError(
                self,
                "'custom' is Celery's pool class named by CELERY_CUSTOM_WORKER_POOL, which pgtasks "
                f"does not load: choose one of pgtasks' pools ({', '.join(POOLS)})",
            )
        elif values not in POOLS:
            choices = ", ".join(repr(p) for p in POOLS)
            raise argparse.ArgumentError(self, f"invalid choice: {values!r} (choose from {choices})")
        setattr(namespace, self.dest, values)
        setattr(namespace, POOL_GIVEN, True)  # it wins over a Celery app's worker_pool


class Parser(argparse.ArgumentParser):
    """The parser of ``pgtasks`` and of each of its commands: an error is three lines (a
    short usage, the error, where to find help), not the whole usage of a command with
    forty options."""

    def error(self, message: str) -> Any:
        positionals = [action for action in self._actions if not action.option_strings]
        formatter = self._get_formatter()
        formatter.add_usage(None, positionals, [], prefix="")
        rest = " ".join(formatter.format_help().split())[len(self.prog) :].strip()
        usage = f"usage: {self.prog} [options] {rest if len(rest) < 60 else '...'}".rstrip()
        self.exit(2, f"{usage}\n{self.prog}: error: {message}\nTry '{self.prog} --help' for help.\n")


def add_ignored(
    parser: argparse.ArgumentParser | Any,
    *flags: str,
    value: bool = False,
    why: str = NO_USE,
    check: Callable[[str], Any] | None = None,
) -> None:
    """Accept the Celery flag ``flags`` (taking a value when ``value``, refused as Celery
    refuses it when ``check`` raises ArgumentTypeError) and ignore it, with a warning that
    gives ``why``."""
    parser.add_argument(
        *flags,
        action=_Ignored,
        nargs=1 if value else 0,
        type=check or str,
        default=argparse.SUPPRESS,
        metavar="VALUE" if value else None,
        why=why,
        help=f"Celery's; ignored ({why})",
    )


def add_refused(parser: argparse.ArgumentParser | Any, *flags: str, why: str) -> None:
    """Refuse the Celery flag ``flags``, saying ``why`` and what to do instead."""
    parser.add_argument(*flags, action=_Refused, default=argparse.SUPPRESS, why=why, help=f"refused: {why}")


def add_file_options(parser: argparse.ArgumentParser, formats: bool) -> None:
    """Celery's ``-f/--logfile`` and ``--pidfile``, served (``formats``: Celery's worker
    expands ``%n`` and the others in them; its beat takes them as they are)."""
    expanded = " (%%n %%h %%d %%p %%i %%I expand; with %%I each prefork process writes its own)"
    parser.add_argument(
        "-f",
        "--logfile",
        help="log to this file instead of stderr, as Celery's" + (expanded if formats else ""),
    )
    parser.add_argument(
        "--pidfile",
        help="keep the process id in this file while it runs; a file naming a live process refuses "
        "the start, as in Celery",
    )


def add_daemon_options(group: Any, files: bool = False) -> None:
    """Celery's options of a daemonized worker or beat: ``--uid`` and ``--gid`` (the caller
    acts on them: cli/privileges.py), the others ignored; so are ``--logfile`` and
    ``--pidfile`` unless ``files`` (the caller serves them)."""
    if not files:
        for flags in (("-f", "--logfile"), ("--pidfile",)):
            add_ignored(group, *flags, value=True)
    group.add_argument("--uid", help="Celery's: started by root, run as this user (a name or number)")
    group.add_argument("--gid", help="Celery's: started by root, run as this group (default: the user's)")
    for flags in (
        ("--umask",),
        ("--executable",),
    ):
        add_ignored(group, *flags, value=True)


def add_pool_option(parser: argparse.ArgumentParser) -> None:
    """``-P/--pool``, whose default is the one of :data:`pgtasks.worker.pools.DEFAULT_POOL`."""
    parser.add_argument(
        "-P",
        "--pool",
        action=_Pool,
        default=DEFAULT_POOL,
        metavar="{" + ",".join(POOLS) + "}",
        help=f"prefork (child processes; also 'processes', as Celery), threads, solo, or asyncio (one "
        f"event loop for async tasks); default {DEFAULT_POOL}, as Celery; Celery's eventlet and gevent "
        "run on threads",
    )


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "FATAL")


def add_loglevel_option(parser: argparse.ArgumentParser) -> None:
    """``-l/--loglevel``: Celery's level names, in any case (``info``); another is refused by
    argparse with the names it takes."""
    parser.add_argument(
        "-l",
        "--loglevel",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help="DEBUG, INFO (default), WARNING, ERROR, CRITICAL or FATAL, in any case",
    )


def port(text: str) -> int:
    """An option's TCP port: 0 (any free port) to 65535."""
    number = int(text)  # a ValueError: argparse says "invalid port value"
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535 (0: any free port), not {number}")
    return number


def optimization(text: str) -> str:
    """Celery's ``-O``: ``default`` or ``fair`` (an operator's typo fails as in Celery)."""
    if text not in ("default", "fair"):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of 'default', 'fair'")
    return text


def autoscale(text: str) -> tuple[int, int]:
    """Celery's ``--autoscale MAX[,MIN]`` as ``(max, min)``: the larger number is the
    maximum, as Celery sorts them; a single number is the maximum with a minimum of 0."""
    parts = text.split(",")
    try:
        numbers = sorted((int(part) for part in parts), reverse=True)
    except ValueError:
        numbers = []
    if not numbers or len(numbers) > 2 or numbers[-1] < 0 or numbers[0] < 1:
        raise argparse.ArgumentTypeError(
            f"takes MAX[,MIN], one or two whole numbers with a maximum of 1 or more, not {text!r}"
        )
    return numbers[0], numbers[1] if len(numbers) > 1 else 0


def seconds(text: str) -> float:
    """An option's duration in seconds: a finite number >= 0."""
    number = float(text)  # a ValueError: argparse says "invalid seconds value"
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, not {text}")
    return number


def whole_or_zero(zero: str) -> Callable[[str], int]:
    """The type of a worker flag taking a whole number >= 0, where 0 means ``zero`` as in
    Celery (``-c 0``: one process per CPU; ``--max-tasks-per-child 0``: no limit)."""

    def parse(text: str) -> int:
        number = int(text)  # a ValueError: argparse says "invalid int value"
        if number < 0:
            raise argparse.ArgumentTypeError(f"must be a whole number >= 0 (0: {zero}), not {number}")
        return number

    parse.__name__ = "int"  # argparse names the type in "invalid int value: 'abc'"
    return parse


def limit_seconds(text: str) -> float:
    """A time limit flag: a finite number of seconds >= 0, 0 being no limit (as Celery's)."""
    number = float(text)  # a ValueError: argparse says "invalid float value"
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0 (0: no limit), not {text}")
    return number


limit_seconds.__name__ = "float"


def queue_list(text: str) -> str:
    """``-Q``: a comma-separated list that names at least one queue (``''`` or ``','``
    would leave the worker nothing, or only by accident the default queue)."""
    if not comma_list(text):
        raise argparse.ArgumentTypeError(f"{text!r} names no queue (give comma-separated queue names)")
    return text


def expand_hostname(name: str) -> str:
    """Celery's node name expansion: ``%h`` the host name, ``%n`` its first label, ``%d`` the
    domain, ``%i`` the pool process index (``0`` in the worker's own process), ``%I`` the same
    with a ``-`` before it (empty in the worker's own process), ``%%`` a ``%``. Another letter
    after ``%`` is refused, as Celery refuses it."""
    host = socket.gethostname()
    short, _, domain = host.partition(".")
    keys = {"h": host, "n": short, "d": domain, "i": "0", "I": ""}
    try:
        return expand_formats(name, keys, "node name")
    except UnknownFormat as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def global_options(*, top_level: bool = False, broker: bool = True) -> argparse.ArgumentParser:
    """Celery's global options as a parent parser. The top-level parser's copy has defaults
    (None); the commands' copy has none, so that a command's namespace, which argparse copies
    over the top-level one, keeps what was given before the command. ``broker`` False leaves
    out ``-b/--broker`` for a command that has a ``--broker`` of its own (import-celery)."""
    default = None if top_level else argparse.SUPPRESS
    parent = argparse.ArgumentParser(add_help=False, argument_default=default)
    group = parent.add_argument_group("global options (before or after the command, as Celery's)")
    group.add_argument("-A", "--app", help="application: module, module:attr")
    if broker:
        group.add_argument(
            "-b",
            "--broker",
            dest="broker_url",
            metavar="URL",
            help="a Celery app's broker_url: the database URL (sets CELERY_BROKER_URL)",
        )
    group.add_argument(
        "--workdir", metavar="DIR", help="change to this folder first (before loading the app)"
    )
    add_ignored(group, "--result-backend", value=True, why="results are stored in the pgtasks database")
    add_ignored(group, "--loader", value=True)
    group.add_argument(
        "--config",
        dest="config_module",
        metavar="MODULE",
        help="the configuration module of a Celery app (sets CELERY_CONFIG_MODULE, as Celery's)",
    )
    add_ignored(group, "-C", "--no-color")
    group.add_argument(
        "-q",
        "--quiet",
        action=_Given,
        help=f"as Celery's: no '->' before each worker's reply ({', '.join(sorted(QUIET_COMMANDS))}); "
        "ignored by the other commands",
    )
    add_ignored(group, "--skip-checks", why="pgtasks runs no Django checks")
    return parent


def comma_list(text: str | None) -> list[str]:
    """Celery's ``COMMA SEPARATED LIST`` option value (``-Q a,b``, ``-d w1,w2``): the names,
    stripped, empty ones dropped."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def add_command(
    sub: Any,
    name: str,
    run: Command | None,
    parents: Sequence[argparse.ArgumentParser],
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """The parser of command ``name`` under ``sub``, taking the options of ``parents`` (the
    global ones), and run by ``run`` (None: a subcommand, run by its command's function)."""
    parser: argparse.ArgumentParser = sub.add_parser(name, parents=list(parents), **kwargs)
    if run is not None:
        parser.set_defaults(func=run)
    return parser


def ignored_flags(args: argparse.Namespace) -> list[str]:
    """The Celery flags of the command line that pgtasks ignores, each with the reason."""
    ignored = [value for key, value in vars(args).items() if key.startswith(IGNORED_PREFIX)]
    if getattr(args, "quiet", None) and getattr(args, "command", None) not in QUIET_COMMANDS:
        ignored.insert(0, f"{args.quiet} ({NO_USE})")  # a global option: named first
    return ignored


def quiet(args: argparse.Namespace) -> bool:
    """Whether Celery's global ``-q/--quiet`` was given (before or after the command)."""
    return bool(getattr(args, "quiet", None))


def apply_global_options(args: argparse.Namespace) -> None:
    """Act on the parsed global options: a warning per ignored Celery flag, ``--workdir`` (the
    working folder, before any app is loaded), ``-b/--broker`` (``CELERY_BROKER_URL``, which
    a Celery app's ``broker_url`` gives way to, as in Celery) and ``--config``
    (``CELERY_CONFIG_MODULE``, a Celery app's configuration module)."""
    for flag in ignored_flags(args):
        print(f"pgtasks: warning: ignoring Celery option {flag}", file=sys.stderr)
    if args.workdir:
        try:
            os.chdir(args.workdir)
        except OSError as exc:
            raise ConfigurationError(f"--workdir {args.workdir}: {exc.strerror}") from None
    if args.broker_url:
        os.environ["CELERY_BROKER_URL"] = args.broker_url
    if getattr(args, "config_module", None):
        os.environ["CELERY_CONFIG_MODULE"] = args.config_module
