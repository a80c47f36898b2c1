"""Effects written by the test apps: one line per event, appended to PGTASKS_TEST_LEDGER."""

from __future__ import annotations

import os


def note(*fields: object) -> None:
    path = os.environ.get("PGTASKS_TEST_LEDGER")
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (" ".join(str(f) for f in fields) + "\n").encode())
    finally:
        os.close(fd)
