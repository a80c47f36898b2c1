"""Starting real `pgtasks worker` and `pgtasks beat` processes and reading the effects ledger."""

from __future__ import annotations

import collections
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pgtasks import Client
from pgtasks.sysdb.records import ListTasksParams
from tests.support.cli import REPO, cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for

__all__ = ["REPO", "beat_process", "effects", "largest_claim_of_drain", "stop", "worker_process"]


def _env(database_url: str, crashpoint: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: no crash point inherited from the tests, only the one asked for."""
    env = cli_env(database_url, {"PYTHONUNBUFFERED": "1", **extra})
    env.pop("PGTASKS_CRASHPOINT", None)
    if crashpoint:
        env["PGTASKS_CRASHPOINT"] = crashpoint
    return env


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
    """Start `python -m pgtasks worker` for ``app`` with executor id ``name`` (empty: the
    default one); its output goes to a pipe (read by :func:`stop`), or to the file ``output``
    to be watched while it runs."""
    env = _env(database_url, crashpoint, {"PGTASKS_TEST_LEDGER": str(ledger), **(extra_env or {})})
    named = ("-n", name) if name else ()
    args = ("-A", app, *named, "-c", str(concurrency), "--lease-seconds", str(lease_seconds))
    args += ("--poll-interval", "0.05", "-l", "INFO", "-P", pool, *extra_args)
    return spawn_pgtasks("worker", *args, env=env, output=output)


def beat_process(
    database_url: str, log: Path, app: str = "tests.acceptance.apps.beat_app", crashpoint: str | None = None
) -> subprocess.Popen[str]:
    """Start `python -m pgtasks beat` for ``app``, its output appended to the file ``log``."""
    env = _env(database_url, crashpoint, {})
    return spawn_pgtasks("beat", "-A", app, "-l", "INFO", env=env, output=log)


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


def largest_claim_of_drain(client: Client, worker: subprocess.Popen[str], log: Path, count: int) -> int:
    """Wait until ``worker`` (its output going to ``log``) ran the ``count`` tasks of the
    database, stop it, check that each succeeded after one claim, and return the most tasks one
    of its claims took (the tasks of one claim share its claim token)."""
    try:
        wait_for(
            lambda: not client.list_tasks(status=["ENQUEUED", "PENDING"], limit=1),
            timeout=300,
            what=f"{count:,} tasks to run",
        )
    finally:
        stop(worker)
    assert worker.returncode == 0, log.read_text()[-2000:]
    seen = client.engine.database.sysdb.tasks_list(ListTasksParams(limit=count + 1))
    assert len(seen) == count and {(t.status.value, t.recovery_attempts) for t in seen} == {("SUCCESS", 1)}
    return max(collections.Counter(t.claim_token for t in seen).values())
