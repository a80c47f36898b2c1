"""A real worker's liveness and readiness probes: ``--health-file`` with ``pgtasks health``,
and ``--health-port`` with ``/livez`` and ``/readyz``, through start, kill and clean stop."""

from __future__ import annotations

import re
import signal
import urllib.error
import urllib.request
from pathlib import Path

from pgtasks import Client
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

BOARD_APP = "tests.acceptance.apps.board_app"


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _probe(path: Path, max_age: str = "30") -> tuple[int, str]:
    done = run_pgtasks("health", "--file", str(path), "--max-age", max_age)
    return done.returncode, done.stdout + done.stderr


def test_health_file_and_port_follow_the_worker(database_url: str, tmp_path: Path) -> None:
    health, log = tmp_path / "alive", tmp_path / "worker.log"
    assert _probe(health)[0] == 1  # no worker yet
    args = ("--health-file", str(health), "--health-port", "0", "--health-address", "127.0.0.1")
    proc = worker_process(
        database_url, tmp_path / "ledger", "probed", app=BOARD_APP, extra_args=args, output=log
    )
    try:
        wait_for(lambda: "/livez" in log.read_text(), 60, "the health server to start")
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/livez", log.read_text()).group(1))  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{port}"
        client = Client(database_url)
        assert client.enqueue("board.work", [3]).get(timeout=60) == "value 6"  # claiming
        client.close()
        assert _get(f"{base}/livez") == (200, "ok\n")
        assert _get(f"{base}/readyz") == (200, "ok\n")
        assert _get(f"{base}/other")[0] == 404
        wait_for(health.exists, 30, "the health file")
        code, out = _probe(health)
        assert code == 0 and out.startswith("ok: renewed"), out
        bad = run_pgtasks("health", "--file", str(health), "--max-age", "0")
        assert bad.returncode == 2 and "--max-age must be positive" in bad.stderr
    finally:
        stop(proc)
    assert proc.returncode == 0, log.read_text()
    assert not health.exists()  # a clean stop removes it: the probe fails at once
    code, out = _probe(health)
    assert code == 1 and "does not exist" in out


def test_a_killed_worker_leaves_a_stale_health_file(database_url: str, tmp_path: Path) -> None:
    health = tmp_path / "alive"
    args = ("--health-file", str(health))
    proc = worker_process(database_url, tmp_path / "ledger", "killed", app=BOARD_APP, extra_args=args)
    try:
        wait_for(health.exists, 60, "the health file")
        assert _probe(health, "5")[0] == 0
    finally:
        stop(proc, signal.SIGKILL)
    assert health.exists()
    wait_for(lambda: _probe(health, "1")[0] == 1, 30, "the health file to go stale")
    code, out = _probe(health, "1")
    assert code == 1 and "the worker's heartbeat is not fresh" in out
