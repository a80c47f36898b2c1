"""The Celery side of the ``pgtasks`` command.

- :func:`prepare_argv` installs the import hook and accepts Celery's command line: Celery's
  flags that pgtasks has no use for are dropped with one warning each, ``-b/--broker`` and
  ``--workdir`` are honoured, ``-n`` expands ``%h``/``%n``/``%d``.
- :func:`run_compat_command` runs Celery's commands: ``celery-check``, ``inspect``, ``purge``,
  ``status``, ``result``, ``call`` (``worker`` and ``beat`` are pgtasks' own).
- :func:`worker_hooks` and :func:`beat_started` hand a worker or beat of a Celery app to
  :mod:`pgtasks.compat.bridge.worker_start` (Celery's start-up), with what the command line gave.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any

from pgtasks.cli.compat_run import run
from pgtasks.compat.bridge import worker_start
from pgtasks.compat.bridge.install import install
from pgtasks.compat.bridge.worker_start import WorkerHooks, beat_started

__all__ = [
    "WorkerHooks",
    "add_compat_commands",
    "beat_started",
    "prepare_argv",
    "run_compat_command",
    "worker_hooks",
]

# Celery flags with no effect on pgtasks: name -> takes a value.
IGNORED_FLAGS: dict[str, bool] = {
    "-E": False,
    "--task-events": False,
    "--events": False,
    "--without-gossip": False,
    "--without-mingle": False,
    "--without-heartbeat": False,
    "-D": False,
    "--detach": False,
    "--purge": False,
    "--discard": False,
    "--no-color": False,
    "-q": False,
    "--quiet": False,
    "-C": False,
    "--pool-restarts": False,
    "--enable-soft-shutdown-on-idle": False,
    "--autoscale": True,
    "--pidfile": True,
    "--logfile": True,
    "-f": True,
    "-O": True,
    "--statedb": True,
    "-S": True,
    "--heartbeat-interval": True,
    "--max-memory-per-child": True,
    "--uid": True,
    "--gid": True,
    "--umask": True,
    "--executable": True,
    "-s": True,
    "--schedule": True,
    "--scheduler": True,
    "-X": True,
    "--exclude-queues": True,
    "--result-backend": True,
    "--config": True,
    "--loader": True,
    "--soft-shutdown-timeout": True,
    "--scheduler-cls": True,
    "--max-interval": True,
}
GIVEN_FLAGS = {"-c": "concurrency", "--concurrency": "concurrency"}
COMPAT_COMMANDS = ("celery-check", "inspect", "purge", "status", "result", "call")
_given: set[str] = set()
_warned: set[str] = set()


def _warn_once(flag: str, why: str = "pgtasks has no use for it") -> None:
    if flag not in _warned:
        _warned.add(flag)
        print(f"pgtasks: warning: ignoring Celery option {flag} ({why})", file=sys.stderr)


def expand_hostname(name: str) -> str:
    """Celery's node name expansion: %h host name, %n its first label, %d the domain, %% a %."""
    host = socket.gethostname()
    short, _, domain = host.partition(".")
    out, i = [], 0
    while i < len(name):
        if name[i] == "%" and i + 1 < len(name):
            out.append({"h": host, "n": short, "d": domain, "%": "%"}.get(name[i + 1], name[i : i + 2]))
            i += 2
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def prepare_argv(argv: list[str]) -> list[str]:
    """Install the import hook and turn Celery's command line into pgtasks'."""
    install()
    if _command_of(argv) == "import-celery":
        return list(argv)  # its --broker is the Celery broker to read from, not the database
    own_flags = _command_of(argv) in COMPAT_COMMANDS  # their flags (purge -f) are their own
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag, has_value, value = arg.partition("=")
        if own_flags and flag not in ("-b", "--broker", "--workdir"):
            out.append(arg)
            i += 1
            continue
        if flag in IGNORED_FLAGS or (
            flag[:2] in IGNORED_FLAGS and not flag.startswith("--") and len(flag) > 2
        ):
            name = flag if flag in IGNORED_FLAGS else flag[:2]
            _warn_once(name)
            attached = bool(has_value) or name != flag
            i += 2 if IGNORED_FLAGS[name] and not attached else 1
            continue
        if flag in ("-b", "--broker"):
            os.environ["CELERY_BROKER_URL"] = value if has_value else argv[i + 1]
            i += 1 if has_value else 2
            continue
        if flag == "--workdir":
            os.chdir(value if has_value else argv[i + 1])
            i += 1 if has_value else 2
            continue
        if flag in ("-P", "--pool"):
            pool = value if has_value else (argv[i + 1] if i + 1 < len(argv) else "")
            if pool in ("eventlet", "gevent"):
                _warn_once(f"{flag} {pool}", "green threads are not supported; using -P threads")
                out += [flag, "threads"]
                i += 1 if has_value else 2
                continue
        if flag in ("-n", "--hostname"):
            out += [flag, expand_hostname(value if has_value else argv[i + 1])]
            _given.add("hostname")
            i += 1 if has_value else 2
            continue
        if flag in GIVEN_FLAGS:
            _given.add(GIVEN_FLAGS[flag])
        if flag in ("-l", "--loglevel") and has_value:
            out += [flag, value]
            i += 1
            continue
        out.append(arg)
        i += 1
    return out


# -- worker start-up (the Celery glue lives in pgtasks.compat.bridge.worker_start) ----------
def worker_hooks(app: Any, args: argparse.Namespace) -> WorkerHooks:
    """The Celery start-up of ``pgtasks worker`` (see
    :func:`pgtasks.compat.bridge.worker_start.worker_hooks`), with the settings this command
    line gave explicitly."""
    return worker_start.worker_hooks(app, args, _given)


# -- Celery's other commands ----------------------------------------------------------------
def add_compat_commands(sub: Any) -> None:
    """Celery's commands as subparsers of ``sub`` (they run through :func:`run_compat_command`;
    the main parser has them too so that ``pgtasks --help`` lists them)."""
    sub.add_parser(
        "celery-check",
        help="list the Celery settings and features of a Celery app that pgtasks ignores or lacks",
        description="Exit 1 when the app uses something pgtasks does not support.",
    )
    inspect = sub.add_parser(
        "inspect",
        help="ask the live workers: ping, active, scheduled, registered, stats, ...",
        description="Answered from the database (worker heartbeats and running tasks). Exit 0 when "
        "at least one worker replies, 1 when none does (a Kubernetes probe can run `inspect ping`).",
    )
    inspect.add_argument("method", help="ping, active, scheduled, reserved, registered, stats, revoked, ...")
    inspect.add_argument("ids", nargs="*", help="task ids (query_task)")
    inspect.add_argument("-d", "--destination", help="comma-separated worker names to ask (default: all)")
    inspect.add_argument(
        "-t", "--timeout", type=float, default=1.0, help="accepted for Celery; replies are immediate"
    )
    inspect.add_argument("-j", "--json", action="store_true", help="print the replies as one JSON object")
    purge = sub.add_parser("purge", help="discard every waiting task (of some queues)")
    purge.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")
    purge.add_argument("-Q", "--queues", help="comma-separated queues (default: all)")
    status = sub.add_parser(
        "status",
        help="list the live workers (exit 1 when none is alive)",
        description="A worker is alive while its heartbeat is within its lease.",
    )
    status.add_argument("-j", "--json", action="store_true", help="print the workers as JSON")
    result = sub.add_parser("result", help="print a task's result")
    result.add_argument("task_id", help="the task id")
    result.add_argument(
        "--traceback", action="store_true", help="print the traceback of a failed task instead"
    )
    result.add_argument("-t", "--task", help="accepted for Celery; the name is read from the task")
    call = sub.add_parser("call", help="send a task by name and print its id")
    call.add_argument("name", help="the registered task name")
    call.add_argument("-a", "--args", default="[]", help="positional arguments as a JSON list")
    call.add_argument("-k", "--kwargs", default="{}", help="keyword arguments as a JSON object")
    call.add_argument("--queue", help="the queue (default: the task's)")
    call.add_argument("--countdown", type=float, help="run no sooner than S seconds from now")
    call.add_argument("--eta", help="run no sooner than this ISO 8601 time")
    call.add_argument("--expires", help="seconds, or an ISO 8601 time, after which the task is dropped")
    for name in COMPAT_COMMANDS:
        sub.choices[name].add_argument(
            "-A", "--app", dest="sub_app", metavar="APP", help="application: module, module:attr"
        )


def _compat_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pgtasks", description="Celery's commands on pgtasks.")
    parser.add_argument("-A", "--app")
    add_compat_commands(parser.add_subparsers(dest="command", required=True))
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command word of a command line (skipping options and the value of -A/-b)."""
    i = 0
    while i < len(argv):
        if argv[i] in ("-A", "--app", "-b", "--broker", "--workdir"):
            i += 2
            continue
        if not argv[i].startswith("-"):
            return argv[i]
        i += 1
    return None


def run_compat_command(argv: list[str]) -> int | None:
    """Run one of Celery's commands if ``argv`` names one; None otherwise."""
    if _command_of(argv) not in COMPAT_COMMANDS:
        return None
    args = _compat_parser().parse_args(argv)
    return run(args)
