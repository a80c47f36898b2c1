"""A task that forks and lets the child return out of the task (or a step) would go on as a
second copy of the worker: it would report an outcome on the pool's pipe or connection, serve
later tasks and record their outcomes under the wrong ids. Such a copy exits instead."""

from __future__ import annotations

import contextlib
import os

_MESSAGE = (
    "pgtasks: a process forked by task {task_id} returned from the {what} (pid {pid}, forked from "
    "{parent}); it exits. End a forked child with os._exit().\n"
)


def exit_if_forked_copy(
    started_in: int, task_id: str, what: str, raised: BaseException | None = None
) -> None:
    """End this process at once when it is not ``started_in``, the process the task started
    in: a child the task forked, returning (or raising ``raised``) into pgtasks. Nothing of
    the parent's is touched (no flush, no logging lock another thread may have held at the
    fork): a line on the standard error's descriptor, then ``os._exit`` with 0 after a
    return, the code of a ``SystemExit`` (``sys.exit()`` in the child), else 1."""
    pid = os.getpid()
    if pid == started_in:
        return
    line = _MESSAGE.format(task_id=task_id, what=what, pid=pid, parent=started_in)
    with contextlib.suppress(OSError):
        os.write(2, line.encode("utf-8", "backslashreplace"))
    os._exit(_exit_code(raised))


def _exit_code(raised: BaseException | None) -> int:
    if raised is None:
        return 0
    if isinstance(raised, SystemExit):
        code = raised.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 1
