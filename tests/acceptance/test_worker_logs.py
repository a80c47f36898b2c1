"""A real worker's log as Celery users read it (prefork children named ``ForkPoolWorker-N``,
task name and id on task loggers' records, results on success, tracebacks on failure) and as
JSON lines for log collectors."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pgtasks import Client
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

LOG_APP = "tests.acceptance.apps.log_app"
STAMP = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: "
CHILD = STAMP + r"(INFO|WARNING)/ForkPoolWorker-\d+\] "


def _run(database_url: str, tmp_path: Path, pool: str, *extra: str) -> tuple[str, dict[str, str]]:
    """Run one of each task on a worker; return its output and the task ids by name."""
    client = Client(database_url)
    proc = worker_process(
        database_url, tmp_path / "ledger", f"logs-{pool}", app=LOG_APP, pool=pool, extra_args=extra
    )
    try:
        ids = {
            "add": client.enqueue("logs.add", [2, 3]).id,
            "long": client.enqueue("logs.long").id,
            "fail": client.enqueue("logs.fail", ["the disk is full"]).id,
            "retry": client.enqueue("logs.retry").id,
        }
        for task_id in ids.values():
            wait_for(lambda t=task_id: client.AsyncResult(t).status in ("SUCCESS", "ERROR"), 60, "the tasks")
    finally:
        out = stop(proc)
        client.close()
    assert proc.returncode == 0, out
    return out, ids


def test_prefork_worker_logs_as_celery(database_url: str, tmp_path: Path) -> None:
    out, ids = _run(database_url, tmp_path, "prefork")
    add, fail = re.escape(ids["add"]), re.escape(ids["fail"])
    assert re.search(rf"^{STAMP}INFO/MainProcess\] Task logs\.add\[{add}\] received$", out, re.M), out
    assert re.search(
        rf"^{STAMP}INFO/MainProcess\] Task logs\.add\[{add}\] succeeded in \d+\.\d{{3}}s: 5$", out, re.M
    )
    # The task's own records: from a child named as Celery names it, with the task's name and id.
    assert re.search(rf"^{CHILD}logs\.add\[{add}\]: adding 2 and 3$", out, re.M), out
    assert re.search(rf"^{CHILD}logs\.add\[{add}\]: a plain logger inside the task$", out, re.M), out
    assert "MainProcess] logs.add[" not in out
    long_line = next(line for line in out.splitlines() if f"[{ids['long']}] succeeded" in line)
    shown = long_line.split("s: ", 1)[1]
    assert shown == "'" + "x" * 1020 + "...", long_line  # Celery's 1024-character repr
    failed = re.search(
        rf"^{STAMP}ERROR/MainProcess\] Task logs\.fail\[{fail}\] raised unexpected: "
        r"ValueError\('the disk is full'\)\nTraceback \(most recent call last\):\n"
        r"(.*?)\nValueError: the disk is full$",
        out,
        re.M | re.S,
    )
    assert failed is not None, out
    assert "raise ValueError(message)" in failed.group(1)
    retry = re.escape(ids["retry"])
    assert re.search(  # Celery's line, which operators' scripts grep for "retry: Retry in"
        rf"^{STAMP}INFO/MainProcess\] Task logs\.retry\[{retry}\] retry: "
        r"Retry in 0\.5s: ValueError\('the line is busy'\)$",
        out,
        re.M,
    ), out


def test_json_log_format_gives_one_object_per_line(database_url: str, tmp_path: Path) -> None:
    out, ids = _run(database_url, tmp_path, "threads", "--log-format", "json")
    records = [json.loads(line) for line in out.splitlines() if line.strip()]  # every line is JSON
    keys = {"time", "level", "logger", "process", "message", "task_name", "task_id", "exc_info"}
    assert all(set(r) == keys for r in records)
    own = next(r for r in records if r["message"] == "adding 2 and 3")
    assert own["task_name"] == "logs.add" and own["task_id"] == ids["add"]
    assert own["logger"] == "tests.acceptance.apps.log_app" and own["level"] == "INFO"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d", own["time"])
    failure = next(r for r in records if "raised unexpected" in r["message"])
    assert failure["level"] == "ERROR" and failure["message"].endswith("ValueError('the disk is full')")
    assert failure["exc_info"].startswith("Traceback (most recent call last):")
    assert failure["exc_info"].endswith("ValueError: the disk is full")
    banner = next(r for r in records if "--- app:" in r["message"])
    assert banner["task_id"] is None and banner["process"] == "MainProcess"


def test_a_logfile_the_app_s_own_logging_leaves_unused_is_warned_of(sqlite_url: str, tmp_path: Path) -> None:
    """An application that sets logging up itself keeps its handlers; ``--logfile`` is then
    not used, and the worker says so (it was silently ignored)."""
    logfile = tmp_path / "worker.log"
    proc = worker_process(
        sqlite_url,
        tmp_path / "ledger",
        "own-logging",
        app=LOG_APP,
        extra_env={"LOG_APP_CONFIGURES_LOGGING": "1"},
        extra_args=("--logfile", str(logfile)),
    )
    client = Client(sqlite_url)
    try:
        assert client.enqueue("logs.add", [1, 2]).get(timeout=60) == 3
    finally:
        out = stop(proc)
        client.close()
    assert proc.returncode == 0, out
    assert f"--logfile {logfile} is not used: the application configured logging itself" in out
    assert "own-logging ready." in out  # the application's handler got the worker's lines
