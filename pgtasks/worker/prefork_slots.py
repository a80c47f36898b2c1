"""The prefork pool's shared slots: one cell per child, in memory shared by the worker and
every child (mapped before the fork server is forked, so each child inherits it).

A child takes its tasks in micro-batches (see :mod:`pgtasks.worker.prefork`); before each
task it writes the task's index in its batch and its start time into its slot, so the parent
knows which task a child is running and since when without a message per task: it enforces
hard time limits from there, and knows, when it kills a child (time limit, ``terminate``) or
a child dies, which task was in progress and which of its batch never started. The parent
cancels a batch-mate that has not started (revoked with terminate) by setting its bit in the
slot's cancel mask; the child reads the mask after writing its slot, before it runs the task.

Only the child writes the index and start time, only the parent the cancel mask (and it
resets the slot while the child is idle, before sending it a batch). The child writes the
start time before the index and the parent reads the index first: a torn read pairs a task
with a later start, never an earlier one, so no task is killed before its time.
"""

from __future__ import annotations

import ctypes
import mmap

# Children a pool can hold at once (pool_grow past it is refused): 24 bytes each.
CAPACITY = 1024
_FIELDS = 3  # index in the batch (-1: none yet), start time (time.monotonic()), cancel mask


class Slots:
    """The shared cells; the parent hands a slot number to each child it spawns."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._memory = mmap.mmap(-1, capacity * _FIELDS * 8)  # anonymous, MAP_SHARED
        self._cells = (ctypes.c_double * (capacity * _FIELDS)).from_buffer(self._memory)
        self._free = list(range(capacity - 1, -1, -1))

    def take(self) -> int:
        """A free slot for a new child, reset (parent); ValueError when every slot is taken."""
        if not self._free:
            raise ValueError(f"Can't grow pool: at most {len(self._cells) // _FIELDS} processes")
        slot = self._free.pop()
        self.reset(slot)
        return slot

    def give(self, slot: int) -> None:
        """The slot of a child that is gone (or will not write any more), free again."""
        self._free.append(slot)

    def reset(self, slot: int) -> None:
        """No task started, none cancelled (parent, while the child is idle)."""
        base = slot * _FIELDS
        self._cells[base] = -1.0
        self._cells[base + 1] = 0.0
        self._cells[base + 2] = 0.0

    def start(self, slot: int, index: int, now: float) -> None:
        """The child starts the task at ``index`` of its batch at ``now`` (child)."""
        base = slot * _FIELDS
        self._cells[base + 1] = now
        self._cells[base] = float(index)

    def running(self, slot: int) -> tuple[int, float]:
        """(index in the batch of the task started last, or -1; its start time) (parent)."""
        base = slot * _FIELDS
        index = int(self._cells[base])
        return index, self._cells[base + 1]

    def cancel(self, slot: int, index: int) -> None:
        """Ask the child not to start the task at ``index`` of its batch (parent)."""
        base = slot * _FIELDS + 2
        self._cells[base] = float(int(self._cells[base]) | (1 << index))

    def cancelled(self, slot: int, index: int) -> bool:
        """Whether the parent cancelled the task at ``index`` (child, after :meth:`start`)."""
        return bool(int(self._cells[slot * _FIELDS + 2]) & (1 << index))
