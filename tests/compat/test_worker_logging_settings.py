"""A Celery app's logging settings, as a real `pgtasks worker` applies them, compared with what
Celery 5.5's worker does: ``worker_log_format`` and ``worker_task_log_format`` shape its lines,
``worker_hijack_root_logger`` (on by default) removes the application's root handlers,
``worker_redirect_stdouts`` (on by default) logs what a task prints at
``worker_redirect_stdouts_level``, in a prefork child and in the worker's own process. (A bad
value of these is refused at start: test_worker_settings.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pgtasks.compat.celery import Celery
from tests.support.cli import cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop

APP = "tests.compat.apps.settings_app"


def talked(
    url: str, tmp_path: Path, settings: dict[str, object], *flags: str, root_handler: bool = False
) -> str:
    """The output of a worker of APP with ``settings`` that ran ``settings.talk`` once."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "worker.log"
    env = cli_env(
        url, {"APP_SETTINGS": json.dumps(settings), "APP_ROOT_HANDLER": "1" if root_handler else ""}
    )
    worker = spawn_pgtasks("worker", "-A", APP, "-n", "logs@test", "-c", "1", *flags, env=env, output=log)
    sender = Celery("sender", broker=url)
    try:
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, "the worker to start")
        assert sender.send_task("settings.talk").get(timeout=60) == "said"
        wait_for(lambda: "succeeded" in log.read_text(), 30, "the success line")
    finally:
        sender.close()
        stop(worker)
    return log.read_text()


def test_the_log_formats_shape_the_worker_and_task_lines(sqlite_url: str, tmp_path: Path) -> None:
    out = talked(
        sqlite_url,
        tmp_path,
        {
            "worker_log_format": "W|%(levelname)s|%(processName)s|%(message)s",
            "worker_task_log_format": "T|%(levelname)s|%(task_name)s|%(message)s",
        },
        "-l",
        "info",
    )
    assert "W|INFO|MainProcess|logs@test ready." in out, out
    assert re.search(r"^W\|INFO\|MainProcess\|Task settings\.talk\[[-0-9a-f]+\] succeeded in ", out, re.M), (
        out
    )
    assert "T|WARNING|settings.talk|logged by talk" in out, out


def test_what_a_task_prints_is_logged_at_the_redirect_level(sqlite_url: str, tmp_path: Path) -> None:
    out = talked(sqlite_url, tmp_path, {})  # Celery's defaults: on, at WARNING
    assert re.search(
        r"WARNING/ForkPoolWorker-1\] settings\.talk\[[-0-9a-f]+\]: printed by talk$", out, re.M
    ), out
    threads = talked(sqlite_url, tmp_path / "t", {"worker_redirect_stdouts_level": "error"}, "-P", "threads")
    assert re.search(r"ERROR/MainProcess\] settings\.talk\[[-0-9a-f]+\]: printed by talk$", threads, re.M), (
        threads
    )
    off = talked(sqlite_url, tmp_path / "off", {"worker_redirect_stdouts": False})
    assert re.search(r"^printed by talk$", off, re.M), off


def test_the_root_logger_is_hijacked_unless_the_app_says_not_to(sqlite_url: str, tmp_path: Path) -> None:
    hijacked = talked(sqlite_url, tmp_path, {}, root_handler=True)
    assert "APP-HANDLER" not in hijacked and "logs@test ready." in hijacked, hijacked
    kept = talked(sqlite_url, tmp_path / "kept", {"worker_hijack_root_logger": False}, root_handler=True)
    assert "APP-HANDLER logs@test ready." in kept and "APP-HANDLER logged by talk" in kept, kept
    assert "] logs@test ready." not in kept, kept  # the worker adds no handler of its own


def test_the_beat_of_a_celery_app_logs_in_its_format(sqlite_url: str, tmp_path: Path) -> None:
    """Celery's beat sets its logging up as the worker does: worker_log_format, the root logger
    taken over."""
    log = tmp_path / "beat.log"
    settings = {"worker_log_format": "B|%(levelname)s|%(message)s"}
    env = cli_env(sqlite_url, {"APP_SETTINGS": json.dumps(settings), "APP_ROOT_HANDLER": "1"})
    beat = spawn_pgtasks("beat", "-A", APP, "-l", "info", env=env, output=log)
    try:
        wait_for(lambda: "beat ready" in log.read_text() or beat.poll() is not None, 60, "the beat to start")
    finally:
        stop(beat)
    assert "B|INFO|beat ready" in log.read_text() and "APP-HANDLER" not in log.read_text(), log.read_text()
