"""The `pgtasks` command line, run as real subprocesses."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from pgtasks import Client
from pgtasks.sysdb.sqlfiles import load_migrations
from pgtasks.sysdb.urls import parse_database_url
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process


def test_demo_runs_on_sqlite_and_prints_the_results(tmp_path: Path) -> None:
    done = run_pgtasks("demo", "--database-url", f"sqlite:///{tmp_path / 'demo.sqlite3'}", "--tasks", "8")
    assert done.returncode == 0, done.stderr
    assert "8/8 orders succeeded" in done.stdout
    assert done.stdout.count("SUCCESS") == 8
    # Orders 4 and 8 had a payment that failed once and was retried by the step.
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if "SUCCESS" in line}
    assert rows["4"][3] == "2" and rows["1"][3] == "1"


def test_migrate_and_manage_tasks(database_url: str) -> None:
    env = {"PGTASKS_DATABASE_URL": database_url}
    first = run_pgtasks("migrate", env=env)
    versions = [m.version for m in load_migrations(parse_database_url(database_url).dialect)]
    assert first.returncode == 0 and f"applied {versions}" in first.stdout
    assert "up to date" in run_pgtasks("migrate", env=env).stdout
    client = Client(database_url)
    waiting = client.enqueue("durable.three_steps", [1])
    listing = run_pgtasks("tasks", "list", "--status", "ENQUEUED", env=env)
    assert waiting.id in listing.stdout and "durable.three_steps" in listing.stdout
    got = json.loads(run_pgtasks("tasks", "get", waiting.id, "--json", env=env).stdout)
    assert got["status"] == "ENQUEUED" and got["steps"] == []
    assert run_pgtasks("tasks", "cancel", waiting.id, env=env).stdout.startswith("cancel: done")
    again = run_pgtasks("tasks", "cancel", waiting.id, env=env)
    assert again.returncode == 1 and "nothing to do" in again.stdout
    assert run_pgtasks("tasks", "resume", waiting.id, env=env).returncode == 0
    forked = run_pgtasks("tasks", "fork", waiting.id, "--start-step", "1", env=env).stdout.strip()
    assert client.AsyncResult(forked).status == "ENQUEUED"
    missing = run_pgtasks("tasks", "get", "no-such-id", env=env)
    assert missing.returncode == 1 and "no task with id" in missing.stderr
    client.close()


def test_worker_reports_bad_configuration_clearly(tmp_path: Path, sqlite_url: str) -> None:
    no_module = run_pgtasks("worker", "-A", "no_such_module_here", env={"PGTASKS_DATABASE_URL": sqlite_url})
    assert no_module.returncode == 2 and "no module named 'no_such_module_here'" in no_module.stderr
    redis = run_pgtasks(
        "worker",
        "-A",
        "tests.acceptance.apps.durable_app",
        env={"PGTASKS_DATABASE_URL": "redis://localhost:6379/0"},
    )
    assert redis.returncode != 0 and "pgtasks cannot use the Redis URL" in redis.stderr
    for flags, message in (
        (("--prefetch-multiplier", "-1"), "--prefetch-multiplier must be >= 0 (0: the default), not -1"),
        (("--prune-interval", "0"), "prune_interval must be a positive number of seconds"),
        (("--prune-interval", "inf"), "prune_interval must be a positive number of seconds"),
    ):
        bad = run_pgtasks(
            "worker",
            "-A",
            "tests.acceptance.apps.durable_app",
            *flags,
            env={"PGTASKS_DATABASE_URL": sqlite_url},
        )
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr


def test_a_killed_worker_not_yet_reaped_gives_its_name_up_at_once(database_url: str, tmp_path: Path) -> None:
    # A supervisor restarts a SIGKILLed worker before it reaps it: the old pid is a zombie on
    # this host, so the new worker takes the name over at once (the lease is 60 s).
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = worker_process(database_url, tmp_path / "ledger", "reborn", lease_seconds=60, output=logs[0])
    second = None
    try:
        wait_for(lambda: "reborn ready." in logs[0].read_text(), 60, "the first worker to start")
        first.send_signal(signal.SIGKILL)
        stat = Path(f"/proc/{first.pid}/stat")
        wait_for(lambda: stat.read_text().rpartition(")")[2].split()[0] == "Z", 10, "a zombie")
        second = worker_process(database_url, tmp_path / "ledger", "reborn", lease_seconds=60, output=logs[1])
        wait_for(
            lambda: "reborn ready." in logs[1].read_text() or second.poll() is not None,
            60,
            "the second worker to start or fail",
        )
        assert second.poll() is None, logs[1].read_text()
    finally:
        first.wait()
        if second is not None:
            stop(second)


def test_two_live_workers_cannot_share_an_executor_id(database_url: str, tmp_path: Path) -> None:
    first = worker_process(database_url, tmp_path / "ledger", "same-name", lease_seconds=60)
    try:
        client = Client(database_url)
        handle = client.enqueue("durable.three_steps", [2])
        assert handle.get(timeout=60) == 3  # the first worker is up
        second = worker_process(database_url, tmp_path / "ledger", "same-name", lease_seconds=60)
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 2
        assert "executor id 'same-name' is in use by pid" in out
        client.close()
    finally:
        stop(first)
