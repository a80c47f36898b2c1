"""Celery's ``celery.contrib.rdb``: a debugger for a task running in a worker, reached over
TCP (``telnet HOST PORT``), as the Debugging guide uses it::

    from celery.contrib import rdb

    @app.task
    def add(x, y):
        result = x + y
        rdb.set_trace()  # the task waits here for a client
        return result

The worker logs the address to connect to; ``continue`` (or ``exit``) in the session lets
the task go on. ``CELERY_RDB_HOST`` (default 127.0.0.1, this host only) and ``CELERY_RDB_PORT``
(default 6899) choose where it listens: the first free port from the base port, offset by the
prefork process's number so that two processes do not race for one port.
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import pdb
import socket
import sys
from types import FrameType
from typing import IO, Any

__all__ = ["CELERY_RDB_HOST", "CELERY_RDB_PORT", "DEFAULT_PORT", "Rdb", "debugger", "set_trace"]

DEFAULT_PORT = 6899
CELERY_RDB_HOST = os.environ.get("CELERY_RDB_HOST") or "127.0.0.1"
CELERY_RDB_PORT = int(os.environ.get("CELERY_RDB_PORT") or DEFAULT_PORT)

_current: list[Rdb | None] = [None]  # the debugger of this process while a session is open


def _process_offset() -> int:
    """The prefork process's number (``ForkPoolWorker-3``: 3), else 0."""
    _, _, number = multiprocessing.current_process().name.rpartition("-")
    return int(number) if number.isdigit() else 0


def _listen(host: str, port: int, search_limit: int, skew: int) -> tuple[socket.socket, int]:
    """A socket bound to the first free port from ``port + skew``, listening."""
    for candidate in range(port + skew, port + skew + search_limit):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.EADDRINUSE, errno.EINVAL):
                continue
            raise
        sock.listen(1)
        return sock, candidate
    raise OSError(
        f"remote debugger: no free port from {port + skew} to {port + skew + search_limit - 1} on "
        f"{host}: set CELERY_RDB_PORT to a free one"
    )


class Rdb(pdb.Pdb):
    """A pdb session over one TCP client: created, it waits for the client to connect."""

    me = "Remote Debugger"

    def __init__(
        self,
        host: str = CELERY_RDB_HOST,
        port: int = CELERY_RDB_PORT,
        port_search_limit: int = 100,
        port_skew: int = 0,
        out: IO[str] | None = None,
    ) -> None:
        self.out = out if out is not None else sys.stdout
        self.active = True
        self._previous = sys.stdin, sys.stdout
        self._sock, self.port = _listen(host, port, port_search_limit, port_skew + _process_offset())
        self.host = host
        self.ident = f"{self.me}:{self.port}"
        self.say(f"{self.ident}: waiting for a client: telnet {host} {self.port}")
        self.say(f"{self.ident}: `continue` or `exit` in the session lets the task go on")
        self._client, address = self._sock.accept()
        self.remote_addr = ":".join(str(part) for part in address)
        self.say(f"{self.ident}: session with {self.remote_addr} opened")
        self._handle = self._client.makefile("rw")
        sys.stdin = sys.stdout = self._handle  # what the debugged code prints goes to the client
        super().__init__(completekey="tab", stdin=self._handle, stdout=self._handle)

    def say(self, message: str) -> None:
        print(message, file=self.out, flush=True)

    def __enter__(self) -> Rdb:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._close_session()

    def _close_session(self) -> None:
        sys.stdin, sys.stdout = self._previous
        self.stdin, self.stdout = self._previous
        if not self.active:
            return
        self.active = False
        for closing in (self._handle, self._client, self._sock):
            with contextlib.suppress(OSError):  # the client went away first
                closing.close()
        self.say(f"{self.ident}: session with {self.remote_addr} closed")

    def do_continue(self, arg: str) -> bool:
        """Close the session and let the task go on."""
        self._close_session()
        self.set_continue()
        return True

    do_c = do_cont = do_continue

    def do_quit(self, arg: str) -> bool:
        """Close the session and let the task go on without the debugger (pdb's quit would
        raise BdbQuit into the task)."""
        self._close_session()
        sys.settrace(None)
        return True

    do_q = do_exit = do_quit


def debugger() -> Rdb:
    """The debugger of this process with an open session, or a new one (which waits for a client)."""
    current = _current[0]
    if current is None or not current.active:
        current = _current[0] = Rdb()
    return current


def set_trace(frame: FrameType | None = None) -> None:
    """Stop here (or in ``frame``) and wait for a debugger client."""
    if frame is None:
        frame = sys._getframe().f_back
    debugger().set_trace(frame)
