"""Management commands refuse to guess the database, and ``tasks fork`` refuses a start step
past the recorded ones (issue 17, item 9). Real ``pgtasks`` subprocesses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pgtasks import App, ConfigurationError
from tests.support.cli import cli_argv, run_pgtasks
from tests.support.inprocess import running_worker, wait_for
from tests.support.processes import stop, worker_process

NO_DATABASE = (
    "no database configured: pass --database-url, set PGTASKS_DATABASE_URL, or name the application with -A"
)


@pytest.mark.parametrize(
    "command",
    [
        ("tasks", "list"),
        ("tasks", "get", "some-id"),
        ("tasks", "cancel", "some-id"),
        ("tasks", "fork", "some-id"),
        ("queue", "list"),
        ("queue", "set", "default", "--concurrency", "2"),
        ("schedule", "list"),
        ("migrate",),
        ("migrate", "--print-sql"),
    ],
)
def test_management_commands_need_a_configured_database(tmp_path: Path, command: tuple[str, ...]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PGTASKS_DATABASE_URL"}
    done = subprocess.run(
        cli_argv(*command), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert NO_DATABASE in done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no ./pgtasks.sqlite3 made behind the user's back


@pytest.mark.parametrize("command", [("tasks", "list"), ("queue", "list")])
def test_celerys_broker_option_names_the_database_without_an_app(
    database_url: str, command: tuple[str, ...]
) -> None:
    """``celery -b URL flower`` (celery-director's ``director celery flower``) runs without an
    app: Celery's ``-b`` names the database of a management command as ``--database-url``
    does. It was "no database configured"."""
    done = run_pgtasks("-b", database_url, *command, env={"PGTASKS_DATABASE_URL": ""})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.split()[0] in ("id", "queue"), done.stdout


def test_status_and_inspect_take_celerys_broker_option_without_an_app(
    database_url: str, tmp_path: Path
) -> None:
    """``celery -b URL status`` and ``inspect ping`` (a health check with no project code) ask
    the workers of the database ``-b`` names, as Celery's default app does. They were
    refused: "-A/--app is required"."""
    quiet = {"PGTASKS_DATABASE_URL": ""}
    done = run_pgtasks("-b", database_url, "status", env=quiet)
    assert (done.returncode, done.stderr.strip()) == (69, "Error: No nodes replied within time constraint")
    worker = worker_process(database_url, tmp_path / "ledger", "health-w1")
    try:
        answered = lambda: run_pgtasks("-b", database_url, "inspect", "ping", env=quiet).returncode == 0  # noqa: E731
        wait_for(answered, timeout=60, what="the worker to answer ping")
        done = run_pgtasks("-b", database_url, "status", env=quiet)
        assert done.returncode == 0 and "1 node online." in done.stdout, (done.stdout, done.stderr)
    finally:
        stop(worker)


def test_fork_past_the_recorded_steps_is_an_error(database_url: str) -> None:
    app = App("forks", database_url=database_url, poll_interval=0.05)

    @app.step
    def one() -> int:
        return 1

    @app.step
    def two() -> int:
        return 2

    @app.task(name="forks.two_steps")
    def two_steps() -> int:
        return one() + two()

    with running_worker(app):
        handle = two_steps.delay()
        assert handle.get(timeout=30) == 3
    message = (
        f"start_step 4 is past the recorded steps of task {handle.id!r}: it has 2 recorded steps, "
        "so start_step must be from 1 to 3"
    )
    with pytest.raises(ConfigurationError) as refused:
        app.fork_task(handle.id, start_step=4)
    assert str(refused.value) == message
    cli = run_pgtasks("tasks", "fork", handle.id, "--start-step", "99", url=database_url)
    assert cli.returncode == 2 and "start_step 99 is past the recorded steps" in cli.stderr, cli.stderr
    for start in (1, 2, 3):  # up to one past the last recorded step
        assert app.fork_task(handle.id, start_step=start)
    app.close()


@pytest.mark.parametrize("action", ["get", "cancel", "resume", "fork"])
def test_a_task_id_that_is_not_utf8_is_one_line_and_exit_2(database_url: str, action: str) -> None:
    not_utf8 = os.fsdecode(b"\xed\xa0\x80")  # a surrogate's UTF-8 encoding: invalid in argv
    done = run_pgtasks("tasks", action, not_utf8, url=database_url)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        "pgtasks: error: task id '\\udced\\udca0\\udc80' is not valid Unicode (a lone surrogate)"
    ]
    assert done.stdout == ""
