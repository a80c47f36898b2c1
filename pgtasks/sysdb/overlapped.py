"""Writing a large enqueue in chunks on one connection while the caller prepares the next.

Serializing thousands of tasks is Python work and inserting them is server work; on a small
machine the two take similar time. A sender thread writes each chunk (psycopg releases the GIL
while it waits for the server) while the calling thread builds the next, so the two overlap.
Every chunk goes into one transaction: the enqueue is still all or nothing.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from pgtasks.sysdb.records import EnqueueResult, NewTask

_ABORT: list[NewTask] = []  # sentinel: the caller failed, roll back
_WAIT_SECONDS = 0.05  # how often a blocked caller looks whether the sender has failed


def enqueue_overlapped(
    chunks: Iterable[list[NewTask]],
    transaction: Callable[[], AbstractContextManager[Any]],
    write_chunk: Callable[[Any, list[NewTask]], list[EnqueueResult]],
) -> list[EnqueueResult]:
    """Write ``chunks`` with ``write_chunk(conn, tasks)`` on the connection that
    ``transaction()`` yields inside one transaction, while the next chunk is being produced."""
    pending: queue.Queue[list[NewTask] | None] = queue.Queue(maxsize=2)
    results: list[EnqueueResult] = []
    failure: list[BaseException] = []

    def send() -> None:
        try:
            with transaction() as conn:
                while (chunk := pending.get()) is not None:
                    if chunk is _ABORT:
                        raise _CallerFailed
                    results.extend(write_chunk(conn, chunk))
        except _CallerFailed:
            pass
        except BaseException as exc:
            failure.append(exc)

    sender = threading.Thread(target=send, name="pgtasks-enqueue", daemon=True)
    sender.start()
    try:
        for chunk in chunks:
            if not _put(pending, chunk, sender) or failure:
                break
        else:
            _put(pending, None, sender)
    except BaseException:
        _put(pending, _ABORT, sender)
        sender.join()
        raise
    sender.join()
    if failure:
        raise failure[0]
    return results


class _CallerFailed(Exception):
    pass


def _put(
    pending: queue.Queue[list[NewTask] | None], item: list[NewTask] | None, sender: threading.Thread
) -> bool:
    """Hand ``item`` to the sender; False if the sender has stopped (it failed)."""
    while sender.is_alive():
        try:
            pending.put(item, timeout=_WAIT_SECONDS)
            return True
        except queue.Full:
            continue
    return False
