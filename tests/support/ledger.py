"""The effects ledger tasks append to, read back: its lines, the start/end times written by tasks
and the limits checked from them; and the text of any file a process may not have written yet."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pgtasks import current_task


def append(*fields: str) -> None:
    """Append "<task id> <fields...>" to the ledger named by PGTASKS_TEST_LEDGER. One O_APPEND
    write: the line survives a SIGKILL of the process right after it."""
    ctx = current_task()
    line = " ".join((ctx.task_id if ctx else "-", *fields)) + "\n"
    fd = os.open(os.environ["PGTASKS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def text_of(path: Path) -> str:
    """The file's text; empty while nothing has created it yet."""
    return path.read_text() if path.exists() else ""


def lines_of(path: Path) -> list[str]:
    """The file's lines; none while nothing has created it yet."""
    return text_of(path).splitlines()


@dataclass(frozen=True)
class Interval:
    task_id: str
    label: str
    start: float
    end: float


def intervals(ledger: Path) -> list[Interval]:
    starts: dict[str, tuple[float, str]] = {}
    found = []
    for line in ledger.read_text().splitlines():
        task_id, event, at, label = [*line.split(" ", 3), ""][:4]
        if event == "start":
            starts[task_id] = (float(at), label)
        elif event == "end" and task_id in starts:
            begin, label = starts.pop(task_id)
            found.append(Interval(task_id, label, begin, float(at)))
    return sorted(found, key=lambda i: i.start)


def max_overlap(spans: list[Interval]) -> int:
    """The most intervals running at one instant (an end before a start at the same instant)."""
    events = sorted([(s.start, 1) for s in spans] + [(s.end, -1) for s in spans], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    return peak
