"""``--pidfile``: the worker's process id in a file while it runs, as Celery's worker keeps it
(init scripts and monitors such as Monit read it to signal or watch the worker).

A file naming a live process other than this one refuses the start (Celery's message and
exit status 73); one naming a process that is gone, or another user's, is stale and
replaced; one naming this process is a SIGHUP restart's own (the same pid runs the command
line again). The file is removed when the worker stops, if it still names this process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
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
    """Write this process's id to ``path`` (see the module); PidfileError if it cannot. Two
    workers starting at once with one pidfile: only one takes it (the read, the removal of a
    stale file and the creation run under a lock of the file's folder)."""
    with _folder_locked(path):
        running = _read(path)
        if running == os.getpid():  # a SIGHUP restart's own file
            return
        if running is not None and _alive(running):
            raise PidfileError(_taken(path, running))
        if path.exists():  # a dead or another user's process, or no pid at all: stale
            print("Stale pidfile exists - Removing it.", file=sys.stderr)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise PidfileError(f"ERROR: cannot remove the stale pidfile {path}: {exc.strerror}") from exc
        _create(path)


@contextlib.contextmanager
def _folder_locked(path: Path) -> Iterator[None]:
    try:
        folder = os.open(path.parent, os.O_RDONLY)
    except OSError as exc:
        raise PidfileError(f"ERROR: cannot write the pidfile {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)  # released as the descriptor closes
        yield
    finally:
        os.close(folder)


def _create(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # written by one that did not take the lock (another program)
        raise PidfileError(_taken(path, _read(path))) from None
    except OSError as exc:
        raise PidfileError(f"ERROR: cannot write the pidfile {path}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "w") as file:
            file.write(f"{os.getpid()}\n")
    except OSError as exc:  # a full disk: no empty file left behind
        path.unlink(missing_ok=True)
        raise PidfileError(f"ERROR: cannot write the pidfile {path}: {exc.strerror}") from exc


def _taken(path: Path, pid: int | None) -> str:
    return f"ERROR: Pidfile ({path}) already exists.\nSeems we're already running? (pid: {pid})"


def release(path: Path) -> None:
    """Remove ``path`` if it still names this process."""
    try:
        mine = _read(path) == os.getpid()
    except PidfileError:
        return
    if mine:
        with contextlib.suppress(OSError):
            path.unlink()


def _read(path: Path) -> int | None:
    """The pid in ``path``; None if there is no file or it holds no pid (stale). A file
    this process may not read is another's: PidfileError."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PidfileError(f"ERROR: cannot read the pidfile {path}: {exc.strerror}") from exc
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
