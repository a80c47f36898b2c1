"""The prefork pool's fork server, with real processes: children forked on request, their
exit codes reported, and nothing left behind when the worker goes."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from pgtasks.worker.forkserver import ForkServer, ForkServerError
from tests.support.inprocess import wait_for


def _echo(conn: Connection) -> None:
    while (message := conn.recv()) is not None:
        if message == "raise":
            raise RuntimeError("child failed")
        conn.send((os.getpid(), os.getppid(), message))


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie counts: an unreaped exit is still an exit)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.fixture
def server() -> Iterator[ForkServer]:
    forks = ForkServer(_echo)
    forks.start()
    yield forks
    forks.close()


def test_children_are_forked_by_the_server_and_talk_over_their_pipe(server: ForkServer) -> None:
    first, first_conn = server.spawn()
    second, second_conn = server.spawn()
    first_conn.send("hello")
    second_conn.send("world")
    assert first_conn.recv() == (first.pid, server.pid, "hello")
    assert second_conn.recv() == (second.pid, server.pid, "world")
    assert first.pid != second.pid and server.pid != os.getpid()


def test_exit_codes_are_reported_as_multiprocessing_does(server: ForkServer) -> None:
    clean, clean_conn = server.spawn()
    failing, failing_conn = server.spawn()
    killed, _killed_conn = server.spawn()
    clean_conn.send(None)
    failing_conn.send("raise")
    killed.kill()
    for child in (clean, failing, killed):
        child.join(timeout=20)
    assert (clean.exitcode, failing.exitcode, killed.exitcode) == (0, 1, -signal.SIGKILL)
    assert clean_conn.poll(5)
    with pytest.raises(EOFError):
        clean_conn.recv()


def test_join_returns_at_its_timeout_while_the_child_lives(server: ForkServer) -> None:
    child, conn = server.spawn()
    child.join(timeout=0.05)
    assert child.exitcode is None
    conn.send("still there")
    assert conn.recv()[2] == "still there"


def test_a_failed_fork_is_reported_and_the_server_serves_on(server: ForkServer) -> None:
    assert server.pid is not None
    child, _conn = server.spawn()
    # The limit caps descriptor numbers, not their count: set it to the lowest free number,
    # so that no new descriptor (the pipe of the next child) can be made at all, whatever gaps
    # the server's table has above it.
    taken = {int(fd) for fd in os.listdir(f"/proc/{server.pid}/fd")}
    lowest_free = min(set(range(len(taken) + 1)) - taken)
    limits = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (lowest_free, limits[1]))  # no new pipe
    try:
        with pytest.raises(ForkServerError, match="could not fork: Too many open files"):
            server.spawn()
    finally:
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, limits)
    _again, conn = server.spawn()  # the server and its first child lived on
    conn.send("after")
    assert conn.recv()[2] == "after" and not _gone(child.pid)


def test_a_wedged_server_fails_the_spawn_after_its_timeout() -> None:
    forks = ForkServer(_echo, spawn_timeout=0.2)
    forks.start()
    assert forks.pid is not None
    os.kill(forks.pid, signal.SIGSTOP)
    try:
        with pytest.raises(ForkServerError, match="gone: timed out"):
            forks.spawn()
    finally:
        os.kill(forks.pid, signal.SIGCONT)
        forks.close()


def test_closing_the_server_takes_its_children_with_it(server: ForkServer) -> None:
    children = [server.spawn()[0] for _ in range(3)]
    server.close()
    for child in children:
        wait_for(lambda child=child: _gone(child.pid), what=f"child {child.pid} to exit")
    with pytest.raises(ForkServerError, match="not running"):
        server.spawn()


def test_a_worker_killed_with_sigkill_leaves_no_process_behind(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from pgtasks.worker.forkserver import ForkServer
        from tests.unit.test_forkserver import _echo
        forks = ForkServer(_echo)
        forks.start()
        children = [forks.spawn() for _ in range(2)]  # their pipes stay open: they wait
        print(forks.pid, *(child.pid for child, _pipe in children), flush=True)
        time.sleep(600)
        """
    )
    repo = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen([sys.executable, "-c", script], cwd=repo, stdout=subprocess.PIPE, text=True)
    assert worker.stdout is not None
    pids = [int(pid) for pid in worker.stdout.readline().split()]
    assert len(pids) == 3 and not any(_gone(pid) for pid in pids)
    worker.kill()
    worker.wait(timeout=20)
    for pid in pids:
        wait_for(lambda pid=pid: _gone(pid), what=f"process {pid} to die with the worker")
