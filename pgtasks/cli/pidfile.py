"""``--pidfile``: the worker's process id in a file while it runs, as Celery's worker keeps it
(init scripts and monitors such as Monit read it to signal or watch the worker).

A file naming a live process other than this one refuses the start (Celery's message and
exit status 73); one naming a process that is gone, or another user's, is stale and
replaced; one naming this process is a SIGHUP restart's own (the same pid runs the command
line again). The file is removed when the worker stops, if it still names this process.
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
    """Write this process's id to ``path`` (see the module); PidfileError if it cannot. The
    file is created exclusively: of two workers starting at once with the same pidfile, one
    takes it and the other is refused."""
    running = _read(path)
    if running == os.getpid():  # a SIGHUP restart's own file
        return
    if running is not None or path.exists():
        if running is not None and _alive(running):
            raise PidfileError(_taken(path, running))
        print("Stale pidfile exists - Removing it.", file=sys.stderr)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise PidfileError(f"ERROR: cannot remove the stale pidfile {path}: {exc.strerror}") from exc
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # another worker took it since the read
        raise PidfileError(_taken(path, _read(path))) from None
    except OSError as exc:
        raise PidfileError(f"ERROR: cannot write the pidfile {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "w") as file:
        file.write(f"{os.getpid()}\n")


def _taken(path: Path, pid: int | None) -> str:
    return f"ERROR: Pidfile ({path}) already exists.\nSeems we're already running? (pid: {pid})"


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
        # Another user's process: as Celery, not this worker's (after a reboot its old pid
        # may be a system daemon's), so the file is stale.
        return False
    return True
