"""Start before the database (issue 17, item 7): `pgtasks worker` and `pgtasks beat` started
while their PostgreSQL server is not up yet wait for it, with one clear log line, then
serve; `--no-wait-for-database` (or a Celery app's ``broker_connection_retry_on_startup =
False``) fails at once instead. Real processes, a server of the test's own."""

from __future__ import annotations

from pathlib import Path

from pgtasks import Client
from tests.support.cli import cli_env, run_pgtasks, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.pgserver import PostgresServer
from tests.support.processes import beat_process, stop, worker_process

WAITING = "is not reachable yet; waiting for it"


def test_a_worker_started_before_its_database_waits_then_runs_a_task(tmp_path: Path) -> None:
    server = PostgresServer()  # its port is chosen; nothing listens there yet
    log = tmp_path / "worker.log"
    worker = worker_process(server.url, tmp_path / "ledger", "early", lease_seconds=5, output=log)
    try:
        wait_for(lambda: WAITING in log.read_text(), timeout=60, what="the worker to say it waits")
        assert worker.poll() is None  # it did not exit (code 2, as it used to)
        server.start()
        client = Client(server.url)
        assert client.enqueue("durable.three_steps", [3]).get(timeout=90) == 5
        client.close()
        assert "is reachable after" in log.read_text()
        assert log.read_text().count(WAITING) == 1  # one warning, not one per attempt
    finally:
        stop(worker)
        server.destroy()


def test_a_beat_started_before_its_database_waits_then_starts(tmp_path: Path) -> None:
    server = PostgresServer()
    log = tmp_path / "beat.log"
    beat = beat_process(server.url, log)
    try:
        wait_for(lambda: log.exists() and WAITING in log.read_text(), timeout=60, what="the beat to wait")
        assert beat.poll() is None
        server.start()
        wait_for(lambda: "pgtasks beat: app" in log.read_text(), timeout=90, what="the beat's banner")
        assert beat.poll() is None
    finally:
        stop(beat)
        server.destroy()


def test_no_wait_for_database_fails_at_once_with_a_clear_error(tmp_path: Path) -> None:
    server = PostgresServer()  # never started
    try:
        for command in (("worker", "-P", "threads"), ("beat",)):
            done = run_pgtasks(
                command[0],
                "-A",
                "tests.acceptance.apps.durable_app",
                *command[1:],
                "--no-wait-for-database",
                url=server.url,
                timeout=60,
            )
            assert done.returncode == 2, done.stderr
            assert "cannot connect to the pgtasks database" in done.stderr and WAITING not in done.stderr
    finally:
        server.destroy()


def test_a_celery_app_may_turn_the_wait_off(tmp_path: Path) -> None:
    server = PostgresServer()
    try:
        env = cli_env(server.url, {"PYTHONUNBUFFERED": "1"})
        proc = spawn_pgtasks("worker", "-A", "tests.compat.apps.no_retry_app", "-P", "threads", env=env)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 2, out
        assert WAITING not in out
    finally:
        server.destroy()
