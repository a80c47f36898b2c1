"""A Celery app's worker settings with a wrong value are refused before the worker starts:
exit status 2 and one line naming the setting and the value, never a traceback. The values
Celery takes besides numbers (worker_concurrency '4' or 'auto') are taken; worker_pool picks
the pool when -P is not given. Real `pgtasks worker` subprocesses, and the same reading of the
settings in this process for the on/off settings and the prefetch multiplier."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest

from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.worker_settings import prefetch_setting, read_worker_settings
from pgtasks.compat.celery import Celery
from pgtasks.engine.errors import ConfigurationError
from tests.support.cli import cli_env, run_pgtasks, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop

APP = "tests.compat.apps.settings_app"


def refusal(url: str, settings: dict[str, object], *flags: str) -> str:
    """The one line of stderr of a worker refused at start-up (asserted: exit 2, one line)."""
    done = run_pgtasks(
        "worker", "-A", APP, *flags, env={"PGTASKS_DATABASE_URL": url, "APP_SETTINGS": json.dumps(settings)}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"worker_concurrency": "x"}, "worker_concurrency must be a whole number >= 1 (or 'auto'), not 'x'"),
        ({"worker_concurrency": -2}, "worker_concurrency must be a whole number >= 1 (or 'auto'), not -2"),
        ({"task_time_limit": "abc"}, "task_time_limit must be a positive number of seconds, not 'abc'"),
        (
            {"task_soft_time_limit": "abc"},
            "task_soft_time_limit must be a positive number of seconds, not 'abc'",
        ),
        ({"task_time_limit": -1}, "task_time_limit must be a positive number of seconds, not -1"),
        (
            {"worker_max_tasks_per_child": "x"},
            "worker_max_tasks_per_child must be a whole number >= 1, not 'x'",
        ),
        (
            {"worker_max_memory_per_child": 2.5},
            "worker_max_memory_per_child must be a whole number >= 1, not 2.5",
        ),
        (
            {"result_expires": -5},
            "result_expires must be a positive timedelta or number of seconds (None or 0: keep "
            "results), not -5",
        ),
        (
            {"accept_content": "json"},
            "accept_content must be a list of serializer names such as ['json'], not 'json'",
        ),
        (
            {"worker_pool": "nonsense"},
            "worker_pool 'nonsense' is not a pool; choose one of prefork, threads, solo, asyncio "
            "(eventlet and gevent run on threads)",
        ),
        (
            {"timezone": "Mars/Olympus"},
            "unknown timezone 'Mars/Olympus': use an IANA zone name such as 'Europe/Paris' or 'UTC'",
        ),
        (
            {"worker_log_format": "no fields"},
            "worker_log_format 'no fields': Invalid format 'no fields' for '%' style",
        ),
        ({"worker_task_log_format": 5}, "worker_task_log_format must be a logging format string, not 5"),
        (
            {"worker_redirect_stdouts_level": "LOUD"},
            "worker_redirect_stdouts_level must be a log level such as 'WARNING' or 'INFO', not 'LOUD'",
        ),
        (
            {"worker_soft_shutdown_timeout": -1},
            "worker_soft_shutdown_timeout must be a positive number of seconds, not -1",
        ),
        # a string alone was read letter by letter: the worker consumed queues 'q' and '1'
        ({"task_queues": "q1"}, "task_queues must be a list of Queue objects or queue names, not 'q1'"),
        ({"task_queues": 5}, "task_queues must be a list of Queue objects or queue names, not 5"),
        ({"task_queues": [5]}, "task_queues holds 5, which is neither a Queue nor a queue name"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_a_wrong_worker_setting_is_refused_in_one_line(
    sqlite_url: str, settings: dict[str, object], message: str
) -> None:
    assert refusal(sqlite_url, settings) == f"pgtasks: error: {message}"


def test_the_command_line_wins_over_a_wrong_setting(pg_url: str, tmp_path: Path) -> None:
    # -c given on the command line, even 0 (Celery's "one per CPU"): worker_concurrency is not read.
    out = started(pg_url, tmp_path, {"worker_pool": "threads", "worker_concurrency": "x"}, "-c", "0")
    assert f"concurrency: {os.cpu_count()} (threads)" in out, out


def test_limit_flags_given_0_are_no_limit_over_the_apps_settings(pg_url: str, tmp_path: Path) -> None:
    """``--time-limit 0``, ``--soft-time-limit 0``, ``--max-tasks-per-child 0`` and
    ``--max-memory-per-child 0`` are Celery's "no limit", and win over the app's settings;
    ``-P processes`` is Celery's alias of prefork."""
    settings = {
        "task_time_limit": 50,
        "task_soft_time_limit": 40,
        "worker_max_tasks_per_child": 1,  # a child per task, were it read
        "worker_max_memory_per_child": 1,  # 1 KiB: a child per task, were it read
    }
    zeros = ("--time-limit", "0", "--soft-time-limit", "0", "--max-tasks-per-child", "0")
    flags = ("-P", "processes", "-c", "1", *zeros, "--max-memory-per-child", "0")
    log = tmp_path / "worker.log"
    env = cli_env(pg_url, {"APP_SETTINGS": json.dumps(settings)})
    worker = spawn_pgtasks("worker", "-A", APP, "-n", "zeros@test", *flags, env=env, output=log)
    app = Celery("zeros", broker=pg_url)
    try:
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, "the worker to start")
        assert "concurrency: 1 (prefork)" in log.read_text(), log.read_text()
        pids = [app.send_task("settings.pid").get(timeout=60) for _ in range(3)]
        assert len(set(pids)) == 1, pids  # one child ran them all: no per-child limit
        stats = run_pgtasks("-A", APP, "inspect", "stats", "-j", url=pg_url)
        pool = json.loads(stats.stdout)["zeros@test"]["pool"]
        assert pool["timeouts"] == [0, 0] and pool["max-tasks-per-child"] == "N/A", pool
        assert pool["implementation"] == "pgtasks.worker:prefork"
    finally:
        stop(worker)
        app.close()
    assert worker.returncode == 0, log.read_text()


def test_celery_check_counts_worker_pool_as_supported() -> None:
    from pgtasks.compat.bridge.check import _setting_finding

    assert _setting_finding("worker_pool") is None  # read by the worker, no longer "use -P"


def started(
    url: str, tmp_path: Path, settings: dict[str, object], *flags: str, env: dict[str, str] | None = None
) -> str:
    """The output of a worker of APP with ``settings`` (and the variables ``env``) until it is
    ready, then stopped."""
    log = tmp_path / f"worker{len(list(tmp_path.glob('worker*.log')))}.log"
    env = cli_env(url, {"APP_SETTINGS": json.dumps(settings), **(env or {})})
    worker = spawn_pgtasks("worker", "-A", APP, "-n", "settings@test", *flags, env=env, output=log)
    try:
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, "the worker to start")
    finally:
        stop(worker)
    return log.read_text()


@pytest.mark.parametrize(
    ("settings", "flags", "banner"),
    [
        ({"worker_concurrency": "3"}, (), "concurrency: 3 (prefork)"),  # Celery's int('3')
        ({"worker_concurrency": " Auto "}, ("-P", "threads"), r"concurrency: \d+ \(threads\)"),
        ({"worker_pool": "solo"}, (), "concurrency: 1 (solo)"),
        (  # Celery's alias of prefork; a limit of 0 is none, as Celery reads it
            {"worker_pool": "processes", "worker_max_tasks_per_child": 0, "task_time_limit": 0},
            ("-c", "1"),
            "concurrency: 1 (prefork)",
        ),
        ({"worker_pool": "solo"}, ("-P", "threads", "-c", "2"), "concurrency: 2 (threads)"),
        # Celery's autoscaler grows the pool to its maximum, whatever -c or the setting say:
        # its maximum is the fixed pool here (it ran one process per CPU, ignoring the flag)
        ({"worker_concurrency": 1}, ("--autoscale=3,5", "-c", "2"), "concurrency: 5 (prefork)"),
    ],
)
def test_celerys_other_forms_of_a_setting_are_taken(
    pg_url: str, tmp_path: Path, settings: dict[str, object], flags: tuple[str, ...], banner: str
) -> None:
    out = started(pg_url, tmp_path, settings, *flags)
    assert re.search(banner if "\\" in banner else re.escape(banner), out), out


def test_a_worker_on_kombus_memory_broker_starts_and_says_it_serves_its_own_process(
    pg_url: str, tmp_path: Path
) -> None:
    # Celery's worker starts on memory:// and receives only what its own process sends;
    # pgtasks refused the URL (exit status 2)
    out = started(pg_url, tmp_path, {"broker_url": "memory://"})
    assert "ready." in out, out
    assert (
        "broker_url 'memory://' is kombu's in-process transport: this worker uses a database of its own"
        in out
    )


def test_a_soft_time_limit_not_below_the_hard_one_is_warned_of(pg_url: str, tmp_path: Path) -> None:
    warning = (
        "the soft time limit (10s) is not below the hard time limit (5s): a task is killed at 5s "
        "without SoftTimeLimitExceeded being raised first; set the soft limit lower"
    )
    out = started(pg_url, tmp_path, {"task_soft_time_limit": 10, "task_time_limit": 5})
    assert warning in out
    out = started(pg_url, tmp_path, {}, "--soft-time-limit", "10", "--time-limit", "5")
    assert warning in out
    assert "soft time limit" not in started(
        pg_url, tmp_path, {"task_soft_time_limit": 4, "task_time_limit": 5}
    )


def _read(url: str, **settings: Any) -> None:
    """The worker's start-up reading of a Celery app's settings, in this process."""
    app = Celery("flags", broker=url)
    app.conf.update(settings)
    limits = dict.fromkeys(("time_limit", "soft_time_limit", "max_tasks_per_child", "max_memory_per_child"))
    try:
        read_worker_settings(app.conf, argparse.Namespace(pool="prefork", concurrency=None, **limits), set())
    finally:
        app.close()


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("enable_utc", "x", "enable_utc must be True or False, not 'x'"),
        ("task_always_eager", "maybe", "task_always_eager must be True or False, not 'maybe'"),
        (
            "broker_connection_retry_on_startup",
            [],
            "broker_connection_retry_on_startup must be True or False",
        ),
        ("worker_disable_prefetch", 2, "worker_disable_prefetch must be True or False, not 2"),
    ],
)
def test_an_on_off_setting_whose_text_is_not_what_celery_makes_of_it_is_refused_at_start(
    sqlite_url: str, setting: str, value: object, message: str
) -> None:
    """Celery takes any of these by its truth value ('maybe' turns the setting on)."""
    with pytest.raises(ConfigurationError, match=f"^{re.escape(message)}"):
        _read(sqlite_url, **{setting: value})


@pytest.mark.parametrize("value", [True, False, None, 0, 1, "", "true", "True", " yes ", "on", "1"])
def test_the_on_off_values_celery_and_their_text_agree_on_are_taken(sqlite_url: str, value: object) -> None:
    _read(sqlite_url, task_track_started=value, task_ignore_result=value, enable_utc=value)


def test_an_off_word_is_on_as_in_celery_with_a_warning(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An environment variable passed on as it is: Celery runs 'false' as on, and so does pgtasks."""
    with caplog.at_level(logging.WARNING, logger="pgtasks.celery"):
        _read(sqlite_url, task_track_started="false", task_ignore_result="0")
    warned = [r.getMessage() for r in caplog.records]
    assert any(
        m.startswith("task_track_started='false' is on: Celery reads any non-empty text") for m in warned
    )
    assert any(m.startswith("task_ignore_result='0' is on: ") for m in warned)
    assert flag("task_track_started", " Off ") is True


def test_a_prefetch_multiplier_is_taken_as_celerys_int_takes_it() -> None:
    assert [prefetch_setting(v) for v in ("4", " 8 ", 0, 3)] == [4, 8, 0, 3]  # Celery: int(value)
    for bad in ("x", -1, "-1", 2.5, True, None):
        with pytest.raises(
            ConfigurationError,
            match=rf"^worker_prefetch_multiplier must be a whole number >= 0, not {re.escape(repr(bad))}$",
        ):
            prefetch_setting(bad)


def test_a_timezone_given_as_a_tzinfo_is_taken(pg_url: str, tmp_path: Path) -> None:
    # Celery takes app.conf.timezone = ZoneInfo("Europe/Paris") (its app.timezone is that
    # tzinfo); the worker refused it: "timezone must be an IANA zone name", exit status 2
    out = started(pg_url, tmp_path, {}, env={"APP_ZONEINFO": "Europe/Paris"})
    assert "ready." in out, out
