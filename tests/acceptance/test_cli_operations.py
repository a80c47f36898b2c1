"""The command line as an operator reads it, run as real subprocesses: every command in
``--help``, ``--version``, tasks and queues with local ISO times, counts and tracebacks, and
``inspect ping`` / ``status`` for a native app with the exit codes probes need."""

from __future__ import annotations

import datetime as dt
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.cli.main import main
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

BOARD_APP = "tests.acceptance.apps.board_app"
COMMANDS = (
    "worker",
    "migrate",
    "tasks",
    "queue",
    "prune",
    "import-celery",
    "beat",
    "schedule",
    "roles",
    "dashboard",
    "flower",
    "celery-check",
    "inspect",
    "control",
    "purge",
    "status",
    "result",
    "call",
    "report",
    "shell",
    "health",
    "demo",
)
ISO_LOCAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d")


def test_help_lists_every_command_and_each_has_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    top = run_pgtasks("--help")
    assert top.returncode == 0, top.stderr
    listed = set(re.findall(r"^    (\S+)\s", top.stdout, re.MULTILINE))
    assert listed == set(COMMANDS)
    # Each command's own help in this process (the parser the subprocess above printed from):
    # 22 more interpreters starting would cost half a minute of the suite.
    for command in COMMANDS:
        assert _exit_status([command, "--help"]) == 0, command
        own = capsys.readouterr()
        assert own.out.startswith(f"usage: pgtasks {command}"), (command, own.out)


def _exit_status(argv: list[str]) -> int | str | None:
    """The exit status of the command line ``argv`` run in this process (argparse's help
    raises SystemExit; Flower's returns)."""
    try:
        return main(argv)
    except SystemExit as exited:
        return exited.code


def test_version_is_the_installed_one() -> None:
    done = run_pgtasks("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"pgtasks {version('pgtasks')}"


def test_tasks_and_queues_read_as_an_operator_reads_them(database_url: str, tmp_path: Path) -> None:
    run_pgtasks("migrate", url=database_url, check=True)
    client = Client(database_url)
    waiting = [client.enqueue("board.work", [i], queue="later") for i in range(3)]
    proc = worker_process(database_url, tmp_path / "ledger", "ops-worker", app=BOARD_APP)
    try:
        failed = client.enqueue("board.fail", ["the <disk> is full"])
        wait_for(lambda: client.AsyncResult(failed.id).status == "ERROR", 60, "the failing task to fail")
        done = client.enqueue("board.work", [4], {"token": "hunter2-secret"})
        assert done.get(timeout=60) == "value 8"
    finally:
        stop(proc)

    shown = run_pgtasks("tasks", "get", failed.id, url=database_url)
    assert shown.returncode == 0, shown.stderr
    fields = dict(
        line.split(":", 1) for line in shown.stdout.split("traceback:")[0].splitlines() if ":" in line
    )
    assert fields["status"].strip() == "ERROR" and fields["worker"].strip() == "ops-worker"
    assert fields["error"].strip() == "ValueError: the <disk> is full"
    created = fields["created"].strip()
    assert ISO_LOCAL.fullmatch(created), created
    assert dt.datetime.fromisoformat(created).utcoffset() == dt.datetime.now().astimezone().utcoffset()
    assert abs(dt.datetime.fromisoformat(created).timestamp() - dt.datetime.now().timestamp()) < 600
    traceback = shown.stdout.split("traceback:\n", 1)[1]
    assert traceback.startswith("Traceback (most recent call last):\n")
    assert "raise ValueError(message)\n" in traceback and "\\n" not in traceback
    assert traceback.rstrip().endswith("ValueError: the <disk> is full")

    secret = run_pgtasks("-A", BOARD_APP, "tasks", "get", done.id, url=database_url)
    assert secret.returncode == 0 and "hunter2-secret" not in secret.stdout, secret.stdout
    assert "'***'" in secret.stdout or '"***"' in secret.stdout

    as_json = json.loads(run_pgtasks("tasks", "get", failed.id, "--json", url=database_url).stdout)
    assert as_json["status"] == "ERROR" and as_json["error_summary"] == "ValueError: the <disk> is full"

    listing = run_pgtasks("tasks", "list", url=database_url)
    assert listing.returncode == 0, listing.stderr
    header, *lines = listing.stdout.splitlines()
    assert header.split() == ["id", "status", "name", "queue", "attempts", "created", "worker", "error"]
    row = next(line for line in lines if line.startswith(failed.id))
    assert "ops-worker" in row and row.endswith("ValueError: the <disk> is full")
    assert ISO_LOCAL.search(row)
    ok_row = next(line for line in lines if line.startswith(done.id))
    assert ok_row.split()[1] == "SUCCESS" and ok_row.endswith(" -")

    queues = run_pgtasks("queue", "list", url=database_url)
    assert queues.returncode == 0, queues.stderr
    head, *rows = queues.stdout.splitlines()
    assert head.split()[:5] == ["queue", "enqueued", "delayed", "running", "oldest"]
    later = next(r.split() for r in rows if r.startswith("later "))
    assert later[1:4] == ["3", "0", "0"] and re.fullmatch(r"\d+(\.\d)?s|\dm\d\ds", later[4]), later
    default = next(r.split() for r in rows if r.startswith("default "))
    assert default[1:5] == ["0", "0", "0", "-"]
    assert all(client.AsyncResult(w.id).status == "ENQUEUED" for w in waiting)
    client.close()


def test_inspect_ping_and_status_of_a_native_app(database_url: str, tmp_path: Path) -> None:
    run_pgtasks("migrate", url=database_url, check=True)
    nobody = run_pgtasks("-A", BOARD_APP, "inspect", "ping", url=database_url)
    assert nobody.returncode == 69 and "No nodes replied" in nobody.stderr
    assert "is a pgtasks App" not in nobody.stderr
    assert run_pgtasks("-A", BOARD_APP, "status", url=database_url).returncode == 69
    proc = worker_process(database_url, tmp_path / "ledger", "probe-one", app=BOARD_APP, lease_seconds=30)
    try:
        client = Client(database_url)
        assert client.enqueue("board.work", [1]).get(timeout=60) == "value 2"  # the worker is up
        client.close()
        ping = run_pgtasks("-A", BOARD_APP, "inspect", "ping", url=database_url)
        assert ping.returncode == 0, ping.stderr
        assert ping.stdout.splitlines()[:2] == ["->  probe-one: OK", "        pong"]
        assert ping.stdout.rstrip().endswith("1 node online.")
        status = run_pgtasks("-A", BOARD_APP, "status", url=database_url)
        assert (status.returncode, status.stdout) == (0, "->  probe-one: OK\n\n1 node online.\n")
        quiet = run_pgtasks("-q", "-A", BOARD_APP, "status", "-j", url=database_url)
        as_json, count = quiet.stdout.split("\n\n")
        assert list(json.loads(as_json)) == ["probe-one"] and count == "1 node online.\n"
        assert quiet.stderr == ""  # -q is status's own, as Celery's: no "ignored" warning
        registered = run_pgtasks("-A", BOARD_APP, "inspect", "registered", "--json", url=database_url)
        assert "board.fail" in json.loads(registered.stdout)["probe-one"]
        other = run_pgtasks("-A", BOARD_APP, "inspect", "ping", "-d", "someone-else", url=database_url)
        assert other.returncode == 69
        unknown = run_pgtasks("-A", BOARD_APP, "inspect", "reserved", url=database_url)
        assert unknown.returncode == 2 and "not available for a pgtasks App" in unknown.stderr
        purge = run_pgtasks("-A", BOARD_APP, "purge", "-f", url=database_url)
        assert purge.returncode == 2 and "needs a Celery app" in purge.stderr
    finally:
        stop(proc)
    # A worker that stopped removed its executor row: nobody answers.
    after = run_pgtasks("-A", BOARD_APP, "status", url=database_url)
    assert after.returncode == 69 and "No nodes replied" in after.stderr
