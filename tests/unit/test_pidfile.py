"""``--pidfile`` as Celery's worker keeps it (pgtasks/cli/pidfile.py): a live process's file
refuses the start, a dead or another user's process's file is stale and replaced, and the
file is created exclusively; and the ``%`` formats of its path."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pgtasks.cli.pidfile import EX_CANTCREAT, PidfileError, acquire, release
from pgtasks.engine.errors import ConfigurationError
from pgtasks.worker.node_paths import expand_node_path

NOBODY = 65534


def test_a_live_process_refuses_and_a_dead_one_is_stale(tmp_path: Path) -> None:
    path = tmp_path / "w.pid"
    with subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    ) as live:
        path.write_text(f"{live.pid}\n")
        with pytest.raises(
            PidfileError, match=rf"already exists\.\nSeems we're already running\? \(pid: {live.pid}\)"
        ):
            acquire(path)
        assert path.read_text() == f"{live.pid}\n" and PidfileError.status == EX_CANTCREAT
        live.communicate(b"")
    acquire(path)  # its process is gone: stale
    assert path.read_text() == f"{os.getpid()}\n"
    acquire(path)  # this process's own (a SIGHUP restart): kept
    release(path)
    assert not path.exists()
    path.write_text("not a pid\n")
    acquire(path)
    assert path.read_text() == f"{os.getpid()}\n"


def test_another_users_process_is_stale_as_on_celery() -> None:
    """Run as an unprivileged user, a pidfile naming pid 1 (root's: kill() gives EPERM) is
    replaced, as Celery's worker does; it refused the start (exit 73) before."""
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o777)
        path = folder / "w.pid"
        path.write_text("1\n")
        path.chmod(0o666)
        child = os.fork()
        if child == 0:  # pragma: no cover -- the child reports through its exit status
            try:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                acquire(path)
                os._exit(0 if path.read_text() == f"{os.getpid()}\n" else 3)
            except PidfileError:
                os._exit(4)
            except BaseException:
                os._exit(5)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()


def test_node_paths_expand_as_celerys_and_a_native_name_is_its_own() -> None:
    assert expand_node_path("/run/%n.pid", "w1@host.example.com") == "/run/w1.pid"
    assert (
        expand_node_path("%h|%d|%p|%i|%I", "w1@host.example.com", 2)
        == "host.example.com|example.com|w1@host.example.com|2|-2"
    )
    assert expand_node_path("/run/%n-%I.log", "w1@h") == "/run/w1-.log"
    # a native worker's -n a and -n b: two pidfiles (both were celery.pid, refusing the second)
    assert {expand_node_path("/run/%n.pid", n) for n in ("a", "b")} == {"/run/a.pid", "/run/b.pid"}
    with pytest.raises(ConfigurationError, match=r"unknown format %z in path '/run/%z.pid'"):
        expand_node_path("/run/%z.pid", "w1@h")
