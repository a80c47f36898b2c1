"""A prefork child's loop, and the messages it exchanges with the parent.

Parent -> child, over the child's pipe (``Connection.send``): first ``(process name, slot)``,
then micro-batches: lists of ``(TaskRecord fields, steps, soft limit, time.monotonic() when
it was submitted)``, one task first to last; ``None`` asks the child to exit.

Child -> parent, over the same pipe but framed here (a 4-byte length, then a pickle), one
message per task, written as soon as the task is done so that a child killed or dead later in
its batch loses no outcome: ``(Outcome fields or None, seconds it ran or None if it did not
run, retiring)``. The parent reads whatever is there in one ``read`` and splits it
(:class:`MessageReader`), instead of a poll and two reads per message.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import operator
import os
import pickle
import resource
import signal
import struct
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import SoftTimeLimitExceeded
from pgtasks.sysdb.records import Outcome, TaskRecord
from pgtasks.worker.held import HELD_CHECK_SECONDS, checked_to_run
from pgtasks.worker.pools import PoolOptions, run_guarded
from pgtasks.worker.prefork_slots import Slots
from pgtasks.worker.std_streams import reopen_closed

log = logging.getLogger("pgtasks.worker")
LENGTH = struct.Struct("!I")
READ_SIZE = 1 << 16
# A soft limit past a century never falls: setitimer refuses one past time_t (1e300: an
# OverflowError that ended the child before its task, which was given back, again and again).
LONGEST_TIMER = 100 * 366 * 86_400.0

# Records and outcomes cross the pipes as tuples of their fields: pickling the dataclasses
# themselves costs several times more, on both sides, for every task.
record_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(TaskRecord)))
_outcome_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(Outcome)))


def child_main(
    conn: Connection, slots: Slots, engine: Engine, executor_id: str, options: PoolOptions
) -> None:
    """A prefork child: run the batches the parent sends, task by task, and send back each
    outcome; exit when asked, when the parent is gone, after ``max_tasks_per_child`` tasks, or
    after the task that took its resident memory past ``max_memory_per_child`` (the rest of
    its batch goes back to the parent unstarted)."""
    signal.set_wakeup_fd(-1)  # the parent's wake-up pipe is not ours
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent coordinates shutdown
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    # the parent's sockets must not be used (or closed) here
    engine.forget_connections(one_task_at_a_time=True)
    signal.signal(signal.SIGALRM, _soft_limit_reached)
    try:
        # processName in log records, Celery's name for a pool process
        multiprocessing.current_process().name, slot = conn.recv()
    except (EOFError, OSError):
        os._exit(0)
    _call_hook(options.on_child_start)
    fd = conn.fileno()
    done = 0
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            _exit(options, 0)
        if batch is None:
            _exit(options, 0)
        for index, (fields, steps, soft_limit, since) in enumerate(batch):
            started = time.monotonic()
            slots.start(slot, index, started)
            record: TaskRecord | None = None if slots.cancelled(slot, index) else TaskRecord(*fields)
            if record is not None and started - since > HELD_CHECK_SECONDS:
                # waited for a child (held by the parent, or behind its batch-mates): revoked,
                # taken over or expired meanwhile, it must not run
                record = checked_to_run(engine, record, executor_id)
            if record is None:
                _send(fd, (None, None, False))  # revoked, taken over or expired meanwhile: not run
                continue
            if soft_limit is not None:
                signal.setitimer(signal.ITIMER_REAL, min(soft_limit, LONGEST_TIMER))
            try:
                outcome = run_guarded(engine, record, executor_id, steps)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            reopen_closed(record.name)
            done += 1
            retiring = (options.max_tasks_per_child is not None and done >= options.max_tasks_per_child) or (
                options.max_memory_per_child is not None and _resident_kib() > options.max_memory_per_child
            )
            reported = None if outcome is None else _outcome_fields(outcome)
            _send(fd, (reported, time.monotonic() - started, retiring))
            if retiring:  # the parent sends no batch past this count (any rest goes back)
                _exit(options, 0)


def _exit(options: PoolOptions, code: int) -> NoReturn:
    """Leave the child with ``code``, after the pool's exit hook."""
    hook = options.on_child_exit
    if hook is not None:
        _call_hook(lambda: hook(code))
    os._exit(code)


def _call_hook(hook: Callable[[], object] | None) -> None:
    """Run a child hook; what it raises is logged, and the child goes on (or exits) as it would."""
    if hook is None:
        return
    try:
        hook()
    except Exception:
        log.exception("the prefork child's hook %r raised", hook)


def _resident_kib() -> int:
    """The most resident memory this process has held, in KiB (Linux's ``ru_maxrss``): what
    Celery's ``worker_max_memory_per_child`` compares with."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _send(fd: int, message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    view = memoryview(LENGTH.pack(len(data)) + data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:  # the parent is gone
        os._exit(0)


class MessageReader:
    """The parent's side of a child's messages: :meth:`read` takes what the pipe holds."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def read(self) -> tuple[list[tuple[Any, ...]], bool]:
        """(the complete messages read by one ``read``, whether the pipe reached its end:
        the child exited). Call it when the pipe is readable: it blocks otherwise."""
        try:
            data = os.read(self._fd, READ_SIZE)
        except OSError:
            data = b""
        if not data:
            return [], True
        buffer = self._buffer
        buffer += data
        messages = []
        start = 0
        while len(buffer) - start >= LENGTH.size:
            (size,) = LENGTH.unpack_from(buffer, start)
            end = start + LENGTH.size + size
            if end > len(buffer):
                break
            messages.append(pickle.loads(memoryview(buffer)[start + LENGTH.size : end]))
            start = end
        del buffer[:start]
        return messages, False


def outcome_of(fields: tuple[Any, ...] | None) -> Outcome | None:
    return None if fields is None else Outcome(*fields)


def _soft_limit_reached(_signum: int, _frame: object) -> None:
    raise SoftTimeLimitExceeded("task ran past its soft time limit")
