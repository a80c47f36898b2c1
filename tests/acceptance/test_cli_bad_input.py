"""Bad input to `pgtasks` refused in a few lines, never a traceback, with exit status 2: an
app module that raises as it is imported (for every command that takes -A), argparse's
errors (a short usage, the error, where to find help), and worker options out of range or
naming nothing. One real `pgtasks` subprocess for each kind of refusal (its exit status and
standard error); the other cases run the same command line in this process (the parsing and
loading are the same code; a subprocess costs about a second each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.cli.main import main
from pgtasks.cli.worker import consumed_queues
from pgtasks.engine.errors import ConfigurationError
from tests.support.cli import run_pgtasks

APP = "tests.acceptance.apps.durable_app"


def _here(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str
) -> tuple[int | str | None, list[str]]:
    """``pgtasks argv`` run in this process: its exit status and its standard error's lines."""
    monkeypatch.setenv("PGTASKS_DATABASE_URL", url)
    monkeypatch.chdir(Path.cwd())  # --workdir changes it: back after the test
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # -A adds the folder
    capsys.readouterr()
    try:
        status: int | str | None = main(argv)
    except SystemExit as exited:
        status = exited.code
    return status, capsys.readouterr().err.splitlines()


def _raising_app_error(tmp_path: Path) -> list[str]:
    return [
        "pgtasks: error: -A raising_proj: Unable to load celery application: importing 'raising_proj' "
        f"raised RuntimeError: boom at import (at {tmp_path / 'raising_proj.py'}:3)"
    ]


def test_an_app_that_raises_at_import_is_one_line(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "raising_proj.py").write_text("import os\n\nraise RuntimeError('boom at import')\n")
    done = run_pgtasks(
        "--workdir", str(tmp_path), "worker", "-A", "raising_proj", env={"PGTASKS_DATABASE_URL": sqlite_url}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == _raising_app_error(tmp_path)


@pytest.mark.parametrize(
    "command",
    [("beat",), ("inspect", "ping"), ("call", "some.task"), ("purge", "-f"), ("tasks", "list")],
    ids=lambda c: c[0],
)
def test_every_command_that_takes_an_app_says_so_in_one_line(
    tmp_path: Path,
    sqlite_url: str,
    command: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "raising_proj.py").write_text("import os\n\nraise RuntimeError('boom at import')\n")
    argv = ["--workdir", str(tmp_path), *command, "-A", "raising_proj"]
    assert _here(argv, capsys, monkeypatch, sqlite_url) == (2, _raising_app_error(tmp_path))


def test_an_app_with_a_syntax_error_names_the_line(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_proj.py").write_text("x = 1\ndef (:\n")
    argv = ["--workdir", str(tmp_path), "worker", "-A", "broken_proj"]
    status, err = _here(argv, capsys, monkeypatch, sqlite_url)
    assert status == 2 and len(err) == 1, err
    assert "importing 'broken_proj' raised SyntaxError: " in err[0]
    assert err[0].endswith(f"(at {tmp_path / 'broken_proj.py'}:2)")


@pytest.mark.parametrize(
    ("line", "usage", "error"),
    [
        (
            ("worker", "-A", APP, "-c", "abc"),
            "usage: pgtasks worker [options]",
            "argument -c/--concurrency: invalid int value: 'abc'",
        ),
        (
            ("inspect", "--timeout", "abc"),
            "usage: pgtasks inspect [options] [method] [ids ...]",
            "argument -t/--timeout: invalid float value: 'abc'",
        ),
        (
            ("tasks", "get"),
            "usage: pgtasks tasks get [options] task_id",
            "the following arguments are required: task_id",
        ),
    ],
    ids=["worker", "inspect", "tasks-get"],
)
def test_an_argument_error_is_three_lines(
    line: tuple[str, ...],
    usage: str,
    error: str,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prog = usage.split(" [options]")[0].removeprefix("usage: ")
    expected = [usage, f"{prog}: error: {error}", f"Try '{prog} --help' for help."]
    if line[0] == "worker":  # once as a real command line
        done = run_pgtasks(*line)
        assert (done.returncode, done.stderr.splitlines()) == (2, expected)
    else:
        assert _here(list(line), capsys, monkeypatch, sqlite_url) == (2, expected)


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (
            ("--health-port", "99999"),
            "argument --health-port: must be between 0 and 65535 (0: any free port), not 99999",
        ),
        (
            ("--metrics-port", "-1"),
            "argument --metrics-port: must be between 0 and 65535 (0: any free port), not -1",
        ),
        (("--shutdown-grace", "-5"), "argument --shutdown-grace: must be a number of seconds >= 0, not -5"),
        (("-Q", ","), "argument -Q/--queues: ',' names no queue (give comma-separated queue names)"),
        (("-Q", ""), "argument -Q/--queues: '' names no queue (give comma-separated queue names)"),
        (("-c", "-1"), "argument -c/--concurrency: must be a whole number >= 0 (0: one per CPU), not -1"),
        (
            ("--max-tasks-per-child", "-3"),
            "argument --max-tasks-per-child: must be a whole number >= 0 (0: no limit), not -3",
        ),
        (
            ("--max-memory-per-child", "-1"),
            "argument --max-memory-per-child: must be a whole number >= 0 (0: no limit), not -1",
        ),
        (
            ("--time-limit", "-1"),
            "argument --time-limit: must be a number of seconds >= 0 (0: no limit), not -1",
        ),
        (
            ("--soft-time-limit", "nan"),
            "argument --soft-time-limit: must be a number of seconds >= 0 (0: no limit), not nan",
        ),
        (
            ("-P", "custom"),
            "argument -P/--pool: 'custom' is Celery's pool class named by CELERY_CUSTOM_WORKER_POOL, "
            "which pgtasks does not load: choose one of pgtasks' pools (prefork, threads, solo, asyncio)",
        ),
    ],
    ids=[
        "health-port",
        "metrics-port",
        "shutdown-grace",
        "queues-comma",
        "queues-empty",
        "concurrency",
        "max-tasks-per-child",
        "max-memory-per-child",
        "time-limit",
        "soft-time-limit",
        "pool-custom",
    ],
)
def test_worker_options_out_of_range_are_refused_as_they_are_parsed(
    sqlite_url: str,
    flags: tuple[str, ...],
    error: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    status, err = _here(["worker", "-A", APP, *flags], capsys, monkeypatch, sqlite_url)
    assert status == 2, err
    assert f"pgtasks worker: error: {error}" in err


def test_a_health_file_in_a_missing_folder_is_refused_at_start(tmp_path: Path, sqlite_url: str) -> None:
    path = tmp_path / "absent" / "health"
    done = run_pgtasks(
        "worker", "-A", APP, "--health-file", str(path), env={"PGTASKS_DATABASE_URL": sqlite_url}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"pgtasks: error: --health-file {path}: the folder {path.parent} does not exist"
    ]


def test_a_health_file_that_is_a_folder_is_refused_at_start(sqlite_url: str) -> None:
    """``--health-file ''`` (the folder '.') was an IsADirectoryError traceback at each renewal,
    the worker running on."""
    done = run_pgtasks(
        "worker", "-A", APP, "--health-file", "", env={"PGTASKS_DATABASE_URL": sqlite_url}, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == ["pgtasks: error: --health-file .: a folder, not a file to renew"]


def test_a_concurrency_no_pool_can_run_is_one_line(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were tracebacks: the prefork pool's ValueError at its 1,025th child, an OverflowError."""
    prefork = _here(["worker", "-A", APP, "-c", "1025"], capsys, monkeypatch, sqlite_url)
    assert prefork == (
        2,
        [
            "pgtasks: error: the prefork pool runs at most 1,024 processes, not 1,025: more tasks "
            "at once need -P threads (or -P asyncio for async tasks)"
        ],
    )
    huge = int("9" * 20)
    threads = _here(["worker", "-A", APP, "-c", str(huge), "-P", "threads"], capsys, monkeypatch, sqlite_url)
    assert threads == (2, [f"pgtasks: error: concurrency must be at most 1,000,000, not {huge:,}"])


@pytest.mark.parametrize("excluded", ["", ",", " , "])
def test_an_empty_exclude_queues_excludes_nothing_as_in_celery(
    excluded: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Celery's ``-X ''`` is ``['']``: no queue has that name, every queue is consumed."""
    assert consumed_queues("celery,mail", excluded) == ("celery", "mail")
    assert capsys.readouterr().err == ""


def test_exclude_queues_naming_no_consumed_queue_is_warned_of_and_ignored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert consumed_queues("celery,mail", "mail,celry,,") == ("celery",)  # Celery: silently
    assert capsys.readouterr().err.splitlines() == [
        "pgtasks: warning: -X/--exclude-queues 'celry': no such queue is consumed (of 'celery,mail'); ignored"
    ]
    with pytest.raises(ConfigurationError, match=r"^-X/--exclude-queues 'mail,celery' leaves no queue"):
        consumed_queues("celery,mail", "mail,celery")  # Celery starts a worker that consumes nothing


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["dashboard", "--port", "99999"],
            "pgtasks dashboard: error: argument --port: must be between 0 and 65535 (0: any free port), "
            "not 99999",
        ),
        (
            ["flower", "--port=70000"],
            "pgtasks: error: --port: must be between 0 and 65535 (0: any free port), not 70000",
        ),
        (
            ["import-celery", "--broker", "redis://:sekrit@localhost:99999/0"],
            "pgtasks: error: --broker 'redis://:***@localhost:99999/0' is not a valid URL: "
            "Port out of range 0-65535",
        ),
        (
            ["import-celery", "--broker", "redis://:sek%zz@[::1"],
            "pgtasks: error: --broker 'redis://(unreadable URL, not shown)' is not a valid URL: "
            "Invalid IPv6 URL",
        ),
    ],
    ids=["dashboard-port", "flower-port", "broker-port", "broker-ipv6"],
)
def test_ports_and_broker_urls_out_of_range_are_one_line(
    argv: list[str],
    error: str,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each was a traceback (OverflowError from bind(), ValueError from urlsplit)."""
    status, err = _here(argv, capsys, monkeypatch, sqlite_url)
    assert status == 2 and error in err, err
    assert not any("sekrit" in line or "Traceback" in line for line in err)
