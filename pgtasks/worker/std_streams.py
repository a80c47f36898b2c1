"""The worker's standard streams against tasks that close them.

Tasks run in the worker's process (threads, solo and asyncio pools; a prefork child's loop
too), and some close ``sys.stderr`` or ``sys.stdout`` (a library that "daemonizes", a
``with sys.stderr:``). Celery's workers redirect both to a logger by default, so such tasks
run there. Here the worker's log handler writes to a stream of its own on standard error's
descriptor, which closing ``sys.stderr`` does not close, and a closed ``sys.stdout`` or
``sys.stderr`` is opened again after the task, so that neither the worker's own lines nor
the next task's ``print`` or warning fails on it.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from typing import TextIO

log = logging.getLogger(__name__)


def log_stream() -> TextIO:
    """A line-buffered text stream of the worker's own on a duplicate of standard error's
    descriptor (``sys.stderr`` itself when it has none, as under a test's capture)."""
    stream = sys.stderr
    try:
        fd = os.dup(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return stream
    return open(fd, "w", buffering=1, encoding=stream.encoding or "utf-8", errors="backslashreplace")


def reopen_closed(task: str) -> None:
    """Open ``sys.stdout`` / ``sys.stderr`` again on descriptors 1 / 2 if the task just ended
    (``task``, for the warning) closed it. Two attribute reads when nothing was closed."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        if not isinstance(stream, io.IOBase) or not stream.closed:
            continue  # open, or not a file (a LoggingProxy an app redirected it to: left as is)
        try:
            fresh = open(  # noqa: SIM115 (it becomes sys.stdout/sys.stderr)
                fd,
                "w",
                buffering=1,
                encoding=getattr(stream, "encoding", None) or "utf-8",
                errors="backslashreplace",
                closefd=False,
            )
        except OSError:  # the descriptor itself was closed: nothing to write to
            continue
        setattr(sys, name, fresh)
        log.warning("task %s closed sys.%s; the worker opened it again", task, name)
