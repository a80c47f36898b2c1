"""Celery's in-memory broker (``broker_url = "memory://"``, kombu's memory transport) as a
SQLite file of the process's own.

kombu's memory transport keeps one set of queues per process, gone when the process exits:
test settings name it (with ``task_always_eager``, or with a worker started in the test
process). Its stand-in is a SQLite file in a temporary folder, one per process and removed
when the process exits, so every app of the process sends to and reads from the same tasks,
and no other process sees them, as with kombu's.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile

__all__ = ["is_memory_broker", "memory_database"]

MEMORY_SCHEME = "memory"


def is_memory_broker(url: str) -> bool:
    """Whether ``url`` names kombu's memory transport (``memory://``, ``memory://localhost//``)."""
    return url.strip().lower().startswith(MEMORY_SCHEME + "://")


def memory_database() -> str:
    """The URL of this process's SQLite file standing for the memory transport."""
    return _database_of(os.getpid())


@functools.cache
def _database_of(pid: int) -> str:
    # Keyed by pid: a forked process makes a file of its own, as its memory is its own.
    folder = tempfile.mkdtemp(prefix="pgtasks-celery-memory-")
    atexit.register(_remove, folder, pid)
    return f"sqlite:///{os.path.join(folder, 'tasks.sqlite3')}"


def _remove(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # not from a forked child that inherited the handler
        shutil.rmtree(folder, ignore_errors=True)
