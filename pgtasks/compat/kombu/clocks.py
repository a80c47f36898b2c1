"""kombu's ``kombu.clocks``: the Lamport clock Celery applications keep (``app.clock``) and
the tuple that orders events by it."""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

__all__ = ["LamportClock", "timetuple"]


class timetuple(NamedTuple):
    """An event ordered by Lamport clock value, then time, then process id."""

    clock: int | None
    timestamp: float
    id: str
    obj: Any = None


class LamportClock:
    """A logical clock: ``forward()`` on each local event, ``adjust(other)`` on each event
    received; the value orders events across processes (ties broken by process id)."""

    def __init__(self, initial_value: int = 0) -> None:
        self.value = initial_value
        self.mutex = threading.Lock()

    def adjust(self, other: int) -> int:
        """Move past a value seen in another process; return the new value."""
        with self.mutex:
            value = self.value = max(self.value, other) + 1
            return value

    def forward(self) -> int:
        """Count one local event; return the new value."""
        with self.mutex:
            self.value += 1
            return self.value

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"<LamportClock: {self.value}>"
