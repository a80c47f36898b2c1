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
        if os.geteuid() != 0:  # pid 1 is another user's already
            acquire(path)
            assert path.read_text() == f"{os.getpid()}\n"
            return
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


TAKE = """
import sys
from pathlib import Path
from pgtasks.cli.pidfile import PidfileError, acquire
try:
    acquire(Path(sys.argv[1]))
except PidfileError:
    print("refused", flush=True)
    sys.exit(0)
print("took", flush=True)
sys.stdin.read()
"""


def test_of_workers_starting_at_once_on_a_stale_pidfile_one_takes_it(tmp_path: Path) -> None:
    """The read, the stale file's removal and the creation are one step (a lock of the
    folder): without it, one racer could remove another's new file and take it too (2 rounds
    of 20 had two holders in a review's run)."""
    path = tmp_path / "w.pid"
    for _ in range(5):
        with subprocess.Popen([sys.executable, "-c", "pass"]) as gone:
            gone.wait()
        path.write_text(f"{gone.pid}\n")  # stale: its process is gone
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", TAKE, str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        answers = []
        for racer in racers:
            assert racer.stdout is not None
            answers.append(racer.stdout.readline().strip())
        holder = racers[answers.index("took")]
        assert sorted(answers) == ["refused", "refused", "refused", "took"]
        assert path.read_text() == f"{holder.pid}\n"
        for racer in racers:
            racer.communicate("")
        path.unlink()
