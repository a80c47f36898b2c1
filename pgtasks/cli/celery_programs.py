"""Celery's other programs: ``report`` and ``shell``, and a clear refusal for those that
have no counterpart in pgtasks (``events``, ``multi``, ``amqp``, ``graph``, ``list``,
``logtool``, ``upgrade``; ``migrate`` is pgtasks' schema migration, and ``import-celery``
moves a Celery broker's waiting tasks): each says why and what to run instead, where
argparse would only say "invalid choice"."""

from __future__ import annotations

import argparse
import code
import importlib.util
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from pgtasks.cli.compat_commands import run
from pgtasks.cli.options import add_command

# Celery programs pgtasks does not provide: why, and what to use instead.
REFUSED_PROGRAMS = {
    "events": "Celery events are not emitted: every task state is a row of the database. "
    "Watch tasks with `pgtasks dashboard` (or `pgtasks flower`), `pgtasks tasks list`, "
    "or the task signals",
    "multi": "pgtasks runs in the foreground: start one `pgtasks worker` per node under a "
    "supervisor (systemd, Docker, Kubernetes); a systemd unit for it is in docs/celery-migration.md, "
    "section Daemonization",
    "amqp": "there is no message broker: tasks are rows of the pgtasks database "
    "(`pgtasks tasks` and `pgtasks queue` manage them)",
    "list": "there are no broker bindings: queues are names in the database (`pgtasks queue list`)",
    "graph": "pgtasks workers have no bootsteps to draw",
    "logtool": "pgtasks keeps every task's outcome in the database: `pgtasks tasks list "
    "--status FAILURE` lists the failures, `pgtasks tasks get ID` shows one",
    "upgrade": "pgtasks reads Celery's old and new setting names alike: nothing to rewrite",
}
# What ``shell`` adds to the namespace besides the app and its tasks (Celery's list).
SHELL_NAMES = ("chord", "group", "chain", "chunks", "xmap", "xstarmap", "subtask", "signature")


def add_celery_programs(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Register ``report``, ``shell`` and the refused programs (these are left out of
    ``--help``: pgtasks does not offer them)."""
    add_command(
        sub,
        "report",
        partial(run, _report, None),
        parents,
        help="print the versions and settings to paste into a bug report",
    )
    shell = add_command(
        sub,
        "shell",
        partial(run, _shell, None),
        parents,
        help="a Python shell with the app, its tasks and the canvas primitives",
        description="IPython, else bpython, else the plain Python shell (as Celery's).",
    )
    kinds = shell.add_mutually_exclusive_group()
    kinds.add_argument("-I", "--ipython", action="store_true", help="force IPython")
    kinds.add_argument("-B", "--bpython", action="store_true", help="force bpython")
    kinds.add_argument("--python", action="store_true", help="force the plain Python shell")
    shell.add_argument("-T", "--without-tasks", action="store_true", help="do not add the tasks")
    shell.add_argument("--eventlet", action="store_true", help="accepted for Celery; no effect")
    shell.add_argument("--gevent", action="store_true", help="accepted for Celery; no effect")
    for name in REFUSED_PROGRAMS:
        refused = add_command(sub, name, partial(_refuse, name), parents)
        refused.add_argument("rest", nargs=argparse.REMAINDER)


def _refuse(name: str, args: argparse.Namespace) -> int:
    print(f"pgtasks: `{name}` is not provided: {REFUSED_PROGRAMS[name]}", file=sys.stderr)
    return 2


def _report(app: Any, args: argparse.Namespace) -> int:
    print(app.bugreport())
    return 0


def shell_namespace(app: Any, with_tasks: bool = True) -> dict[str, Any]:
    """What Celery's shell puts in scope: the app (``app`` and ``celery``), ``Task``, the
    canvas primitives, and each of the app's own tasks by its function's name."""
    from pgtasks.compat.celery import canvas

    namespace: dict[str, Any] = {"app": app, "celery": app, "Task": app.Task}
    namespace.update({name: getattr(canvas, name) for name in SHELL_NAMES})
    if with_tasks:
        for task in app.tasks.values():
            if not task.name.startswith("celery."):
                namespace[task.name.rsplit(".", 1)[-1]] = task
    return namespace


def _shell(app: Any, args: argparse.Namespace) -> int:
    namespace = shell_namespace(app, not args.without_tasks)
    wanted = "ipython" if args.ipython else "bpython" if args.bpython else "python" if args.python else None
    for kind in [wanted] if wanted else ["ipython", "bpython", "python"]:
        if kind == "python":
            code.interact(local=namespace, banner=f"pgtasks shell: {app.main or '__main__'}", exitmsg="")
            return 0
        module = "IPython" if kind == "ipython" else "bpython"
        if importlib.util.find_spec(module) is not None:
            if kind == "ipython":
                from IPython import start_ipython  # type: ignore[import-not-found]

                start_ipython(argv=[], user_ns=namespace)
            else:
                import bpython  # type: ignore[import-not-found]

                bpython.embed(namespace)
            return 0
        if wanted:
            print(f"pgtasks shell: --{kind} asks for {module}, which is not installed", file=sys.stderr)
            return 2
    return 0
