"""``--pidfile``: the worker's process id in a file while it runs, as Celery's worker keeps it
(init scripts and monitors such as Monit read it to signal or watch the worker).

A file naming a live process other than this one refuses the start (Celery's message and
exit status 73); one naming a process that is gone is stale and replaced; one naming this
process is a SIGHUP restart's own (the same pid runs the command line again). The file is
removed when the worker stops, if it still names this process.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

EX_CANTCREAT = 73  # Celery's exit status when the pidfile exists (os.EX_CANTCREAT)


class PidfileError(Exception):
    """The pidfile names a live worker, or cannot be written; ``status`` is the exit status."""

    status = EX_CANTCREAT


def run_holding(path: str | None, run: Callable[[], int]) -> int:
    """``run()`` with its process id in ``path`` (when given) while it runs; its exit status,
    or 73 with Celery's message on stderr when the pidfile names a live process."""
    if not path:
        return run()
    try:
        acquire(Path(path))
    except PidfileError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    try:
        return run()
    finally:
        release(Path(path))


def acquire(path: Path) -> None:
    """Write this process's id to ``path`` (see the module); PidfileError if it cannot."""
    running = _read(path)
    if running is not None and running != os.getpid():
        if _alive(running):
            raise PidfileError(
                f"ERROR: Pidfile ({path}) already exists.\nSeems we're already running? (pid: {running})"
            )
        print("Stale pidfile exists - Removing it.", file=sys.stderr)
    try:
        path.write_text(f"{os.getpid()}\n")
    except OSError as exc:
        raise PidfileError(f"ERROR: cannot write the pidfile {path}: {exc.strerror}") from exc


def release(path: Path) -> None:
    """Remove ``path`` if it still names this process."""
    if _read(path) == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


def _read(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # anything else is not a pid: stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True
