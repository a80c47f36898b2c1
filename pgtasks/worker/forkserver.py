"""The prefork pool's fork server: a helper process that forks the pool's children.

The worker cannot fork a replacement child itself once its threads run: a thread may hold a
lock at that moment (SQLite's allocator and file-lock mutexes, a psycopg pool's lock), and the
child would inherit it held, by nobody, forever. SQLite says so plainly: an open database
must not cross ``fork()``. So the pool forks this server while the worker is still a single
thread, and every child, first or replacement, is forked from it. The server never touches
the database and never starts a thread, so it always forks from a quiet state.

The protocol runs over one ``SOCK_SEQPACKET`` socket pair (one datagram per message):

- worker -> server: ``b"s"`` (fork a child);
- server -> worker: ``("s", pid, 0)`` with the worker's end of the child's pipe attached
  (``SCM_RIGHTS``), then ``("x", pid, exit code)`` when that child has exited; or
  ``("e", 0, errno)`` when the fork failed (the server lives on).

Closing the worker's end tells the server to exit; the children are killed with it (Linux:
``PR_SET_PDEATHSIG``), so a worker that dies leaves no process behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe

MESSAGE = struct.Struct("!cii")  # kind, pid, exit code
PR_SET_PDEATHSIG = 1
SPAWN_TIMEOUT = 30.0  # seconds a fork may take before the server counts as wedged
# Held back while the server is forked, until it has its own handlers: the worker's, which
# it inherits, would report a signal to the worker a second time through the wake-up pipe.
SERVER_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGCHLD}
ChildMain = Callable[[Connection], None]


class ForkServerError(RuntimeError):
    """The fork server is gone or answered out of protocol."""


class ForkedChild:
    """A child process forked by the fork server (a grandchild of the worker).

    Offers the part of ``multiprocessing.Process`` the pool uses: ``pid``, ``kill``,
    ``join`` and ``exitcode`` (negative for a signal, as multiprocessing reports it).
    """

    def __init__(self, server: ForkServer, pid: int) -> None:
        self._server, self.pid = server, pid
        self._exitcode: int | None = None

    @property
    def exitcode(self) -> int | None:
        if self._exitcode is None:
            self._exitcode = self._server.take_exit_code(self.pid)
        return self._exitcode

    def kill(self) -> None:
        if self.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def join(self, timeout: float | None = None) -> None:
        if self.exitcode is None:
            self._server.wait_exit(self.pid, timeout)
            _ = self.exitcode  # taken from the server's table now, so none is left there

    def forget(self) -> None:
        """Nobody will join this child: let the server drop its exit code when it comes."""
        self._server.forget(self.pid)


class ForkServer:
    """Forks the children that run ``child_main(connection)``; see the module docstring."""

    def __init__(self, child_main: ChildMain, spawn_timeout: float = SPAWN_TIMEOUT) -> None:
        self._child_main, self._spawn_timeout = child_main, spawn_timeout
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()  # one reader and writer of the socket at a time
        self._exits: dict[int, int] = {}
        self._forgotten: set[int] = set()  # children whose exit code nobody will ask for
        self.pid: int | None = None

    def start(self) -> None:
        """Fork the server. Call it while this process has a single thread."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.settimeout(self._spawn_timeout)
        worker = os.getpid()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, SERVER_SIGNALS)
        pid = os.fork()
        if pid == 0:  # the server
            code = 1
            try:
                ours.close()
                _serve(theirs, self._child_main, worker, held)
                code = 0
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        theirs.close()
        self._socket, self.pid = ours, pid

    def spawn(self) -> tuple[ForkedChild, Connection]:
        """Fork a child; return it and the worker's end of its duplex pipe."""
        with self._lock:
            sock = self._require_socket()
            try:
                sock.send(b"s")
                while True:
                    data, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE.size, 1)
                    if not data:
                        raise ForkServerError("the fork server is gone")
                    kind, pid, code = self._decode(data)
                    if kind == b"x":
                        self._record_exit(pid, code)
                        continue
                    if kind == b"e":
                        raise ForkServerError(f"the fork server could not fork: {os.strerror(code)}")
                    if len(fds) != 1:
                        raise ForkServerError("the fork server sent a child without its pipe")
                    # A reused pid: what was recorded of its earlier owner is not this child's.
                    self._exits.pop(pid, None)
                    self._forgotten.discard(pid)
                    return ForkedChild(self, pid), Connection(fds[0])
            except OSError as exc:
                raise ForkServerError(f"the fork server is gone: {exc}") from exc

    def take_exit_code(self, pid: int) -> int | None:
        """The exit code of a child, once the server has reported its exit (then forgotten
        here: the caller keeps it)."""
        self.wait_exit(pid, 0)
        with self._lock:
            return self._exits.pop(pid, None)

    def forget(self, pid: int) -> None:
        with self._lock:
            if self._exits.pop(pid, None) is None:
                self._forgotten.add(pid)

    def _record_exit(self, pid: int, code: int) -> None:
        if pid in self._forgotten:
            self._forgotten.discard(pid)
        else:
            self._exits[pid] = code

    def wait_exit(self, pid: int, timeout: float | None) -> None:
        """Wait until the server reports that ``pid`` exited, for at most ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while pid not in self._exits:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                sock = self._socket
                if sock is None:
                    return  # closed: the server and its children are gone
                ready, _, _ = select.select([sock], [], [], remaining)
                if not ready:
                    return
                try:
                    data, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE.size, 1)
                except OSError:
                    return
                for fd in fds:  # never expected here; do not leak it
                    os.close(fd)
                if not data:
                    return  # the server is gone, and its children with it
                kind, child, code = self._decode(data)
                if kind == b"x":
                    self._record_exit(child, code)

    def close(self) -> None:
        """Ask the server to exit (any child left is killed with it) and reap it."""
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None
        if self.pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = None

    def _require_socket(self) -> socket.socket:
        if self._socket is None:
            raise ForkServerError("the fork server is not running")
        return self._socket

    @staticmethod
    def _decode(data: bytes) -> tuple[bytes, int, int]:
        if len(data) != MESSAGE.size:
            raise ForkServerError(f"the fork server sent {len(data)} bytes, not a message")
        kind, pid, code = MESSAGE.unpack(data)
        if kind not in (b"s", b"x", b"e"):
            raise ForkServerError(f"the fork server sent an unknown message {kind!r}")
        return kind, pid, code


def _serve(sock: socket.socket, child_main: ChildMain, worker: int, mask: set[int | signal.Signals]) -> None:
    """The server's loop: fork on request, report each exit, stop when the worker is gone."""
    die_with_parent(worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker coordinates shutdown
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)  # replaces the worker's, inherited from it
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_read], [], [], 1.0)
        if wake_read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 512)
        _report_exits(sock)
        if sock.fileno() in ready:
            request = sock.recv(16)
            if not request:
                return  # the worker closed its end: stop (the children go with us)
            if request == b"s":
                _fork_child(sock, (wake_read, wake_write), child_main)


def _fork_child(sock: socket.socket, wake: tuple[int, int], child_main: ChildMain) -> None:
    server = os.getpid()
    try:
        worker_end, child_end = Pipe()
    except OSError as exc:  # out of descriptors: tell the worker, stay up for the children
        sock.send(MESSAGE.pack(b"e", 0, exc.errno or 0))
        return
    try:
        pid = os.fork()
    except OSError as exc:  # out of processes or memory: the same
        worker_end.close()
        child_end.close()
        sock.send(MESSAGE.pack(b"e", 0, exc.errno or 0))
        return
    if pid == 0:  # the child
        code = 1
        try:
            die_with_parent(server)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            sock.close()
            worker_end.close()
            for fd in wake:
                os.close(fd)
            child_main(child_end)
            code = 0
        finally:
            os._exit(code)
    child_end.close()
    socket.send_fds(sock, [MESSAGE.pack(b"s", pid, 0)], [worker_end.fileno()])
    worker_end.close()


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        with contextlib.suppress(OSError):  # the worker is gone: nobody to tell
            sock.send(MESSAGE.pack(b"x", pid, os.waitstatus_to_exitcode(status)))


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when its parent (pid ``parent``, read before the fork)
    dies, even by SIGKILL, so no orphan goes on running a task that recovery hands to
    another worker."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # this process's own symbols, libc's among them
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
