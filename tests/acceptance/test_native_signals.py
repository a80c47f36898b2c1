"""A native (not Celery) ``pgtasks worker`` and the signals Celery's worker gives a meaning
to: SIGHUP ends it (a closed terminal), as before; Celery's restart on SIGHUP and stack dump
on SIGUSR1 are a Celery app's worker's only (tests/compat/test_worker_lifecycle.py). Started
with standard output closed, as some daemonizers leave it."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.support.cli import REPO, cli_argv, cli_env
from tests.support.inprocess import wait_for
from tests.support.ledger import text_of


def test_a_native_worker_with_stdout_closed_starts_and_sighup_ends_it(
    database_url: str, tmp_path: Path
) -> None:
    log, pidfile = tmp_path / "worker.log", tmp_path / "w.pid"
    argv = cli_argv(
        "worker", "-A", "tests.acceptance.apps.durable_app", "-P", "threads", "--pidfile", str(pidfile)
    )
    with log.open("a") as sink:
        process = subprocess.Popen(
            argv,
            cwd=REPO,
            env=cli_env(database_url),
            stdout=subprocess.DEVNULL,
            stderr=sink,
            preexec_fn=_closed_stdout_default_sighup,
        )
    try:
        wait_for(lambda: "ready." in text_of(log) or process.poll() is not None, timeout=60, what="ready")
        assert process.poll() is None, text_of(log)
        assert pidfile.read_text() == f"{process.pid}\n"
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=30) == -signal.SIGHUP
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "restart (SIGHUP)" not in text_of(log)


def _closed_stdout_default_sighup() -> None:
    """In the child before exec: fd 1 closed, and SIGHUP at its default whatever the test
    runner ignores (nohup)."""
    os.close(1)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
