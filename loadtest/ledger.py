"""The effects ledger of the load tests' task bodies: one file per process in
``LOADTEST_LEDGER_DIR``, one ``write`` per line, so lines never interleave across processes
and a line survives a SIGKILL of its process right after the write."""

from __future__ import annotations

import os

_ledger: int | None = None


def append(line: str) -> None:
    """Append ``line`` (ending in a newline) to this process's ledger, if the run keeps one."""
    global _ledger
    folder = os.environ.get("LOADTEST_LEDGER_DIR")
    if not folder:
        return
    if _ledger is None:
        path = os.path.join(folder, f"effects-{os.getpid()}.log")
        _ledger = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(_ledger, line.encode())
