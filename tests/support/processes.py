"""Starting real `pgtasks worker` processes and reading the effects ledger."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def worker_process(
    database_url: str,
    ledger: Path,
    name: str,
    app: str = "tests.acceptance.apps.durable_app",
    crashpoint: str | None = None,
    lease_seconds: float = 1.0,
    concurrency: int = 2,
    extra_env: dict[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
    output: Path | None = None,
    pool: str = "threads",
) -> subprocess.Popen[str]:
    """Start `python -m pgtasks worker` for ``app`` with executor id ``name``; its output goes
    to a pipe (read by :func:`stop`), or to the file ``output`` to be watched while it runs."""
    env = {
        **os.environ,
        "PGTASKS_DATABASE_URL": database_url,
        "PGTASKS_TEST_LEDGER": str(ledger),
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    env.pop("PGTASKS_CRASHPOINT", None)
    if crashpoint:
        env["PGTASKS_CRASHPOINT"] = crashpoint
    argv = [
        sys.executable,
        "-m",
        "pgtasks",
        "worker",
        "-A",
        app,
        "-n",
        name,
        "-c",
        str(concurrency),
        "--lease-seconds",
        str(lease_seconds),
        "--poll-interval",
        "0.05",
        "-l",
        "INFO",
        "-P",
        pool,
        *extra_args,
    ]
    if output is None:
        return subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    with output.open("a") as sink:  # the child keeps its own descriptor
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)


def beat_process(
    database_url: str, log: Path, app: str = "tests.acceptance.apps.beat_app", crashpoint: str | None = None
) -> subprocess.Popen[str]:
    """Start `python -m pgtasks beat` for ``app``, its output appended to the file ``log``."""
    env = {**os.environ, "PGTASKS_DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1"}
    env.pop("PGTASKS_CRASHPOINT", None)
    if crashpoint:
        env["PGTASKS_CRASHPOINT"] = crashpoint
    argv = [sys.executable, "-m", "pgtasks", "beat", "-A", app, "-l", "INFO"]
    with log.open("a") as sink:  # the child keeps its own descriptor
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)


def stop(process: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 30) -> str:
    """Signal the process, wait for it, and return everything it printed."""
    if process.poll() is None:
        process.send_signal(sig)
    out, _ = process.communicate(timeout=timeout)
    return out


def effects(ledger: Path) -> collections.Counter[tuple[str, str]]:
    """How many times each (task id, label) effect happened."""
    if not ledger.exists():
        return collections.Counter()
    lines = ledger.read_text().splitlines()
    return collections.Counter(tuple(line.split(" ", 1)) for line in lines)  # type: ignore[misc]
