"""Group commit of step checkpoints: the checkpoints that concurrent tasks of one process
finish while a write is under way share the next write (one statement, one commit).

A step still waits for its own checkpoint to be committed before the task goes on; what is
shared is the commit, so fsync rather than Python sets the pace.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import StepRecord, StepWrite

MAX_BATCH = 200


class CheckpointWriter:
    """A writer thread that records queued checkpoints in batches."""

    def __init__(self, sysdb: SystemDatabase) -> None:
        self._db = sysdb
        self._queue: queue.SimpleQueue[tuple[StepRecord, Future[StepWrite]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="pgtasks-checkpoints", daemon=True)
        self._thread.start()

    def record(self, step: StepRecord) -> StepWrite:
        """Record one checkpoint; returns once it is committed (or raises what the write raised)."""
        return self.submit(step).result()

    def submit(self, step: StepRecord) -> Future[StepWrite]:
        """Queue one checkpoint; the future resolves once it is committed (an event loop awaits
        it with ``asyncio.wrap_future`` instead of blocking)."""
        done: Future[StepWrite] = Future()
        self._queue.put((step, done))
        return done

    def stop(self) -> None:
        """End the writer thread once what is queued has been written."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            try:
                results = self._db.steps_record_many([step for step, _ in batch])
            except BaseException as exc:  # each waiting step decides (retry, release)
                for _, done in batch:
                    done.set_exception(exc)
                continue
            for (_, done), result in zip(batch, results, strict=True):
                done.set_result(result)
