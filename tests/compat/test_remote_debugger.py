"""Celery's remote debugger (``celery.contrib.rdb``, the Debugging guide): a task in a real
prefork worker stops at ``rdb.set_trace()``, the worker logs where to connect, a TCP client
inspects the task's frame, and ``continue`` lets the task finish. pgtasks refused the module
(the task failed with NotImplementedError)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from pgtasks.compat.celery import Celery
from tests.support.cli import cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.pgserver import free_port
from tests.support.processes import stop

APP = "tests.compat.apps.rdb_app"
PROMPT = "(Pdb) "


def _free_base() -> int:
    """A free port whose next one is free too: the debugger of the first prefork process
    listens on base + 1 (an ephemeral port's neighbour may be another connection's)."""
    while True:
        base = free_port()
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", base + 1))
            except OSError:
                continue
        return base


def _until_prompt(conn: socket.socket) -> str:
    """What the debugger sent up to its next prompt."""
    seen = b""
    while not seen.endswith(PROMPT.encode()):
        chunk = conn.recv(1)
        assert chunk, f"the debugger closed the session; it had sent {seen!r}"
        seen += chunk
    return seen.decode()


def test_a_task_stops_in_the_remote_debugger_until_the_client_continues(pg_url: str, tmp_path: Path) -> None:
    base = _free_base()
    log = tmp_path / "worker.log"
    env = cli_env(pg_url, {"CELERY_RDB_PORT": str(base)})
    worker = spawn_pgtasks("worker", "-A", APP, "-c", "1", "-n", "rdb@test", env=env, output=log)
    app = Celery("rdb_client", broker=pg_url, set_as_current=False)
    try:
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, "the worker to start")
        result = app.send_task("rdb_app.add", (2, 3))
        found: list[str] = []

        def announced() -> bool:
            found[:] = re.findall(
                r"Remote Debugger:(\d+): waiting for a client: telnet 127\.0\.0\.1 (\d+)", log.read_text()
            )
            return bool(found)

        wait_for(announced, 60, "the debugger to listen")
        port = int(found[0][1])
        assert port == base + 1  # offset by the prefork process's number (ForkPoolWorker-1), as Celery's
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            assert "-> return result + 1" in _until_prompt(conn)
            conn.sendall(b"p result\n")
            assert _until_prompt(conn).startswith("5\n")
            conn.sendall(b"continue\n")
        assert result.get(timeout=60) == 6
        wait_for(
            lambda: f"Remote Debugger:{port}: session with 127.0.0.1:" in log.read_text(),
            30,
            "the session log",
        )
        assert " closed" in log.read_text()
    finally:
        app.close()
        stop(worker)
