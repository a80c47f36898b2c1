"""A real `pgtasks worker` of a Celery app through its life, as Celery's worker lives it:
settings from ``celeryd_init``, ``worker_process_init`` / ``worker_process_shutdown`` in each
pool process (never in the fork server), ``worker_shutting_down`` as the stop signal comes
(with Celery's ``sig``, ``how``, ``exitcode``), and SIGHUP restarting the worker in place."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import psycopg
import pytest
from celery.exceptions import TimeLimitExceeded

from pgtasks.sysdb.urls import parse_database_url
from tests.compat.apps import lifecycle_app as proj
from tests.support.cli import cli_env, run_pgtasks, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines
from tests.support.ledger import text_of
from tests.support.processes import stop

MODULE = "tests.compat.apps.lifecycle_app"


def start(url: str, ledger: Path, log: Path, *args: str) -> subprocess.Popen[str]:
    env = cli_env(
        url, {"PGTASKS_TEST_LEDGER": str(ledger), "PYTHONUNBUFFERED": "1", "PGTASKS_LIFECYCLE": "1"}
    )
    argv = ("-A", MODULE, "-P", "prefork", "-l", "INFO", "--lease-seconds", "1", *args)
    return spawn_pgtasks("worker", *argv, "--poll-interval", "0.05", env=env, output=log)


def pids_of(ledger: Path, event: str) -> list[int]:
    return [int(line.split()[2]) for line in lines(ledger) if line.startswith(f"signal {event} ")]


@pytest.fixture
def app_on(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PGTASKS_TEST_LEDGER", str(tmp_path / "ledger"))
    proj.app.conf.broker_url = pg_url
    proj.app.set_current()
    yield proj.app
    proj.app.close()


def test_celeryd_init_configures_the_node_and_each_process_signals(
    app_on, pg_url: str, tmp_path: Path
) -> None:
    ledger, log, release = tmp_path / "ledger", tmp_path / "worker.log", tmp_path / "release"
    node = f"configured@{socket.gethostname()}"
    # no -c: the settings decide
    process = start(pg_url, ledger, log, "-n", "configured@%h", "-Q", "celery,other")
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        told = f"signal celeryd_init {node} {process.pid} ['celery', 'other'] 20"
        assert told in lines(ledger)
        stats = app_on.control.inspect(destination=[node]).stats()[node]
        # set by the receiver of celeryd_init for this node, read by the worker after it
        assert stats["pool"]["max-concurrency"] == 3, log.read_text()
        assert stats["pool"]["timeouts"] == [1, 0]
        children = sorted(stats["pool"]["processes"])
        # once in each pool process, never in the fork server they are forked from
        assert sorted(pids_of(ledger, "worker_process_init")) == children, lines(ledger)
        # heartbeat_sent in the worker's main process, again and again (every quarter lease)
        beats = f"signal heartbeat_sent {process.pid} {node}"
        wait_for(lambda: lines(ledger).count(beats) >= 3, timeout=30, what="three heartbeats")
        assert Path(f"{ledger}.alive").exists()
        running = proj.hold.delay(str(release))
        wait_for(lambda: any("task hold started" in e for e in lines(ledger)), timeout=30, what="hold")
        process.send_signal(signal.SIGINT)
        # told as the signal comes, while the task still runs (the shutdown waits for it)
        said = f"signal worker_shutting_down {node} SIGINT Warm 1"
        wait_for(lambda: said in lines(ledger), timeout=30, what="worker_shutting_down")
        assert running.state != "SUCCESS" and process.poll() is None
        release.touch()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    events = lines(ledger)
    assert running.get(timeout=10) == "released"
    assert events.count(said) == 1
    exits = [e.split()[2:] for e in events if e.startswith("signal worker_process_shutdown")]
    assert sorted(exits) == sorted([str(p), str(p), "0"] for p in children)
    assert [e for e in events if not e.startswith("signal heartbeat_sent")][-1].startswith(
        "signal worker_shutdown"
    )


def test_sighup_restarts_the_worker_in_place_sigusr1_dumps_stacks_and_sigquit_is_cold(
    app_on, pg_url: str, tmp_path: Path
) -> None:
    ledger, log, release = tmp_path / "ledger", tmp_path / "worker.log", tmp_path / "release"
    node, pidfile = f"restarted@{socket.gethostname()}", tmp_path / "restarted.pid"
    process = start(pg_url, ledger, log, "-n", node, "-c", "1", "--pidfile", str(pidfile))
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        running = proj.hold.delay(str(release))
        wait_for(lambda: any("task hold started" in e for e in lines(ledger)), timeout=30, what="hold")
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: "restart (SIGHUP)" in log.read_text(), timeout=30, what="the restart")
        release.touch()  # the restart waits for the running task, as a warm shutdown does
        assert running.get(timeout=30) == "released"
        wait_for(lambda: len(pids_of(ledger, "worker_ready")) == 2, timeout=60, what="the second start")
        assert process.poll() is None and pids_of(ledger, "worker_ready") == [process.pid] * 2
        assert proj.pid.delay().get(timeout=30) in pids_of(ledger, "worker_process_init")
        events = lines(ledger)
        assert not any(e.startswith("signal worker_shutting_down") for e in events)  # as Celery's
        assert [e for e in events if e.startswith("signal worker_shutdown")] == [
            f"signal worker_shutdown {process.pid}"
        ]
        # Celery's SIGUSR1: every thread's stack to standard error, and the worker goes on
        process.send_signal(signal.SIGUSR1)
        wait_for(lambda: "most recent call first" in log.read_text(), timeout=30, what="the stacks")
        assert proj.pid.delay().get(timeout=30) and process.poll() is None
        assert pidfile.read_text() == f"{process.pid}\n"  # the restart's own file, kept
        process.send_signal(signal.SIGQUIT)
        assert process.wait(timeout=30) == 1
    finally:
        if process.poll() is None:
            process.kill()
    assert f"signal worker_shutting_down {node} SIGQUIT Cold 1" in lines(ledger)
    assert not pidfile.exists()  # a cold exit removes it too, as Celery's


def test_a_task_killed_at_its_hard_time_limit_sends_task_failure_and_calls_errbacks(
    app_on, pg_url: str, tmp_path: Path
) -> None:
    ledger, log = tmp_path / "ledger", tmp_path / "worker.log"
    process = start(pg_url, ledger, log, "-n", "limited@%h", "-c", "1")
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        never = str(tmp_path / "never")
        killed = proj.hold.apply_async((never, 30), time_limit=1, link_error=proj.errback.s())
        with pytest.raises(TimeLimitExceeded):
            killed.get(timeout=30)
        name = "tests.compat.apps.lifecycle_app.hold"
        # as Celery's worker, in its main process (the task's process was killed): the
        # errbacks once, then task_failure
        wanted = [
            f"errback {process.pid} {killed.id} TimeLimitExceeded",
            f"signal task_failure {process.pid} {name} {killed.id} TimeLimitExceeded",
        ]
        wait_for(lambda: wanted[-1] in lines(ledger), timeout=30, what="task_failure")
        ours = ("errback", "signal task_failure")  # not another app's receivers in this process
        assert [e for e in lines(ledger) if killed.id in e and e.startswith(ours)] == wanted
    finally:
        stop(process)


def test_a_setup_logging_receiver_gets_a_numeric_level_and_no_after_setup_signals(
    pg_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    env = cli_env(pg_url, {"PGTASKS_TEST_LEDGER": str(ledger)})
    argv = ("-A", "tests.compat.apps.logging_app", "-P", "solo", "-l", "warning", "-n", "logs@%h")
    process = spawn_pgtasks("worker", *argv, env=env)
    try:
        wait_for(lambda: "signal worker_ready" in lines(ledger), timeout=60, what="worker_ready")
    finally:
        output = stop(process)
    # as Celery's worker: the receiver took logging over, so the after_setup_* signals are not sent
    assert lines(ledger) == ["signal setup_logging 30 True", "signal worker_ready"], output


def test_a_warm_shutdown_waits_for_a_long_task_as_celery_does(app_on, pg_url: str, tmp_path: Path) -> None:
    ledger, log, release = tmp_path / "ledger", tmp_path / "worker.log", tmp_path / "release"
    process = start(pg_url, ledger, log, "-n", "patient@%h", "-c", "1")
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        running = proj.hold.delay(str(release), 120)
        wait_for(lambda: any("task hold started" in e for e in lines(ledger)), timeout=30, what="hold")
        process.send_signal(signal.SIGTERM)
        # past pgtasks' own 30 s grace: a Celery app's worker still waits, as Celery's
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=35)
        release.touch()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert running.get(timeout=10) == "released"
    assert sum("task hold started" in e for e in lines(ledger)) == 1  # finished, never run again
    assert "grace period over" not in log.read_text()


def test_pidfile_and_logfile_expand_as_celerys_and_a_live_pidfile_refuses_a_second_worker(
    app_on, pg_url: str, tmp_path: Path
) -> None:
    ledger, out = tmp_path / "ledger", tmp_path / "out.txt"
    files = ("--pidfile", f"{tmp_path}/%n.pid", "--logfile", f"{tmp_path}/%n%I.log")
    process = start(pg_url, ledger, out, "-n", "files@%h", "-c", "1", *files)
    pidfile, main_log, child_log = tmp_path / "files.pid", tmp_path / "files.log", tmp_path / "files-1.log"
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        assert pidfile.read_text() == f"{process.pid}\n"
        assert "files@" in main_log.read_text() and "ready." in main_log.read_text()
        proj.logs.delay("hello").get(timeout=30)
        # the pool process (ForkPoolWorker-1) logs to a file of its own: %I is -1 there
        wait_for(lambda: "task says hello" in text_of(child_log), timeout=30, what="the task's log line")
        assert "task says hello" not in main_log.read_text()
        second = run_pgtasks("worker", "-A", MODULE, "-n", "files@%h", *files, url=pg_url, timeout=60)
        assert second.returncode == 73, second.stderr
        assert f"ERROR: Pidfile ({pidfile}) already exists." in second.stderr
        assert f"Seems we're already running? (pid: {process.pid})" in second.stderr
        assert pidfile.read_text() == f"{process.pid}\n"  # the refused start leaves it alone
    finally:
        output = stop(process)
    assert process.returncode == 0, output
    assert not pidfile.exists()  # removed as the worker stops


def test_a_warm_shutdown_past_its_grace_still_sends_worker_shutdown(
    app_on, pg_url: str, tmp_path: Path
) -> None:
    ledger, log = tmp_path / "ledger", tmp_path / "worker.log"
    pidfile = tmp_path / "hurried.pid"
    process = start(
        pg_url, ledger, log, "-n", "hurried@%h", "-c", "1", "--shutdown-grace", "1", "--pidfile", str(pidfile)
    )
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        proj.hold.delay(str(tmp_path / "never"), 60)
        wait_for(lambda: any("task hold started" in e for e in lines(ledger)), timeout=30, what="hold")
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    # the task is left to be recovered, and the worker's end is still told, as Celery's
    assert "grace period over" in log.read_text()
    assert f"signal worker_shutdown {process.pid}" in lines(ledger)
    assert not pidfile.exists()  # removed though the process exits at once


def test_a_broken_claim_loop_still_stops_a_celery_worker_within_the_default_grace(
    app_on, pg_url: str, pg_server_url: str, tmp_path: Path
) -> None:
    """A Celery app's warm shutdown waits for its tasks without limit, but a stop for a
    broken part (claims the database refuses) is bounded: the worker exits 1 for its
    supervisor instead of waiting on a task that holds for a minute."""
    ledger, log = tmp_path / "ledger", tmp_path / "worker.log"
    process = start(pg_url, ledger, log, "-n", "broken@%h", "-c", "1")
    try:
        wait_for(lambda: pids_of(ledger, "worker_ready"), timeout=60, what="worker_ready")
        proj.hold.delay(str(tmp_path / "never"), 120)
        wait_for(lambda: any("task hold started" in e for e in lines(ledger)), timeout=30, what="hold")
        schema = parse_database_url(pg_url).schema
        with psycopg.connect(parse_database_url(pg_server_url).dsn, autocommit=True) as conn:
            conn.execute(f'ALTER TABLE "{schema}".workflow_status RENAME COLUMN enqueue_seq TO moved')
        assert process.wait(timeout=90) == 1
    finally:
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert "the claim loop stopped unexpectedly; shutting down" in text
    assert "grace period was over" in text or "grace period over" in text
