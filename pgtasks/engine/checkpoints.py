"""Group commit of step checkpoints: the checkpoints that concurrent tasks of one process
finish while a write is under way share the next write (one statement, one commit).

A step still waits for its own checkpoint to be committed before the task goes on; what is
shared is the commit, so fsync rather than Python sets the pace. Two writer threads take
turns on their own connections: while one batch waits for its commit, the next is gathered
and sent, so a checkpoint never waits behind a commit in flight, and the server flushes the
WAL of both at once when they meet.

The writers also make the ownership reads that coroutines need before a step (one query
per round for all of them, before the round's checkpoints). A thread blocks on a lock of its
own until a writer releases it; a coroutine awaits a future of its event loop, and the
writer settles all the futures of one loop with a single call into that loop per round (one
wake-up of the loop, not one per checkpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import StepRecord, StepWrite, TaskOwner

MAX_BATCH = 200
WRITERS = 2  # writer threads, each with its own connection: one commits while one gathers


class _Waiter:
    """One thread waiting for its checkpoint: a lock held until the writer settles it."""

    __slots__ = ("_error", "_lock", "_value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._value: Any = None
        self._error: BaseException | None = None

    def settle(self, value: Any, error: BaseException | None) -> None:
        self._value, self._error = value, error
        self._lock.release()

    def wait(self) -> Any:
        self._lock.acquire()
        if self._error is not None:
            raise self._error
        return self._value


# A checkpoint to record or an ownership to read, and who waits for the answer.
_Pending = tuple["StepRecord | TaskOwner", "_Waiter | asyncio.Future[Any]"]
_Settled = list[tuple["asyncio.Future[Any]", Any]]


class CheckpointWriter:
    """Writer threads that record queued checkpoints in batches."""

    def __init__(self, sysdb: SystemDatabase, writers: int = WRITERS) -> None:
        self._db = sysdb
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        for number in range(writers):
            name = f"pgtasks-checkpoints-{number}"
            threading.Thread(target=self._run, name=name, daemon=True).start()

    def record(self, step: StepRecord) -> StepWrite:
        """Record one checkpoint; returns once it is committed (or raises what the write raised)."""
        waiter = _Waiter()
        self._queue.put((step, waiter))
        written: StepWrite = waiter.wait()
        return written

    def record_async(self, step: StepRecord) -> asyncio.Future[StepWrite]:
        """:meth:`record` for a coroutine: a future of the running loop to await (the loop
        runs other tasks while it is written). A future, not a coroutine: one frame less to
        pass through at every step of every task on the loop."""
        return self._queued(step)

    def owned_async(self, owner: TaskOwner) -> asyncio.Future[bool]:
        """Whether the task still runs on ``owner`` (read with the other coroutines' reads),
        as a future of the running loop."""
        return self._queued(owner)

    def _queued(self, request: StepRecord | TaskOwner) -> asyncio.Future[Any]:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put((request, done))
        return done

    def stop(self) -> None:
        """End the writer threads once what is queued has been written."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                self._queue.put(None)  # for the other writers
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
            reads = [item for item in batch if isinstance(item[0], TaskOwner)]
            if reads:  # first: no commit to wait for, and those steps can start meanwhile
                batch = [item for item in batch if not isinstance(item[0], TaskOwner)]
                _answer(reads, self._db.tasks_owned_by)
            if batch:
                _answer(batch, self._db.steps_record_many)


def _answer(batch: list[_Pending], call: Callable[[Any], Sequence[Any]]) -> None:
    """Run ``call`` for the requests of ``batch`` and hand each waiter its answer."""
    try:
        results: Sequence[Any] = call([request for request, _ in batch])
        error: BaseException | None = None
    except BaseException as exc:  # each waiting step decides (retry, release)
        results, error = [None] * len(batch), exc
    _settle(batch, results, error)


def _settle(batch: list[_Pending], results: Sequence[Any], error: BaseException | None) -> None:
    """Hand each waiter its answer: threads directly, coroutines with one call into each
    event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, _Settled] = {}
    for (_, waiter), result in zip(batch, results, strict=True):
        if isinstance(waiter, _Waiter):
            waiter.settle(result, error)
        else:
            by_loop.setdefault(waiter.get_loop(), []).append((waiter, result))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody awaits these any more
            loop.call_soon_threadsafe(_settle_futures, settled, error)


def _settle_futures(settled: _Settled, error: BaseException | None) -> None:
    for done, result in settled:
        if done.done():  # cancelled meanwhile (a time limit): the step's task is gone
            continue
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)
