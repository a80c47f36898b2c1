"""Celery's command line on pgtasks, as real subprocesses: celery-check, inspect, status,
control, result, call, purge, Celery's worker flags, and a Django-style project's worker."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pgtasks.compat import Celery
from pgtasks.sysdb.records import Status
from tests.compat.apps import results_app as proj
from tests.support.cli import REPO, cli_argv, cli_env, run_pgtasks, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process


def test_celery_check_lists_what_pgtasks_ignores_or_lacks(sqlite_url: str) -> None:
    done = run_pgtasks("-A", "tests.compat.apps.check_app", "celery-check", url=sqlite_url)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "setting result_backend" in out and "results are stored in the pgtasks database" in out
    assert "setting task_annotations" not in out  # applied: its '*' rate_limit shows on the task
    assert "setting task_acks_late" in out and "setting task_default_queue" not in out
    assert "setting worker_prefetch_multiplier" not in out  # the prefork pool honours it
    assert "task tests.compat.apps.check_app.limited: rate_limit='10/s'" in out
    assert "signal worker_before_create_process" in out
    clean = run_pgtasks("celery-check", "-A", "tests.compat.apps.signals_app", url=sqlite_url)
    assert clean.returncode == 0 and "supports every Celery setting" in clean.stdout
    # --config: the configuration module of Celery's command line (CELERY_CONFIG_MODULE)
    configured = run_pgtasks(
        "--config",
        "tests.compat.apps.acks_config",
        "celery-check",
        "-A",
        "tests.compat.apps.signals_app",
        url=sqlite_url,
    )
    assert configured.returncode == 1 and "setting task_acks_late" in configured.stdout
    assert "ignoring Celery option --config" not in configured.stderr
    missing = run_pgtasks(
        "--config", "no_such_config", "celery-check", "-A", "tests.compat.apps.signals_app", url=sqlite_url
    )
    assert (
        missing.returncode != 0
        and "CELERY_CONFIG_MODULE (celery --config) names 'no_such_config'" in missing.stderr
    )


def test_message_broker_url_is_refused_with_what_to_set(sqlite_url: str) -> None:
    done = run_pgtasks("-A", "tests.compat.apps.redis_app", "worker", url=sqlite_url)
    assert done.returncode == 2
    assert "pgtasks does not use a message broker" in done.stderr and "postgresql://" in done.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--args", "notjson"), "pgtasks call: --args/--kwargs must be JSON: Expecting value"),
        (("--kwargs", "[1]"), "pgtasks call: --args takes a JSON list and --kwargs a JSON object"),
        (
            ("--eta", "tomorrow"),
            "eta must be a datetime or an ISO 8601 string, not 'tomorrow'",
        ),
        (("--expires", "soon"), "expires must be a datetime or an ISO 8601 string, not 'soon'"),
        (("--countdown", "abc"), "argument --countdown: invalid float value: 'abc'"),
    ],
    ids=["args", "kwargs", "eta", "expires", "countdown"],
)
def test_call_refuses_bad_options_by_name_and_sends_nothing(
    sqlite_url: str, flags: tuple[str, str], message: str
) -> None:
    done = run_pgtasks(
        "-A",
        "tests.compat.apps.results_app",
        "call",
        "tests.compat.apps.results_app.add",
        *flags,
        url=sqlite_url,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_inspect_status_call_result_and_purge(pg_url: str, tmp_path: Path) -> None:
    app = "tests.compat.apps.results_app"
    process = worker_process(
        pg_url,
        tmp_path / "ledger",
        "cli%I-%i",  # a Celery app's -n without "@" names the host: celery@cli-0
        app=app,
        extra_args=("--without-gossip", "-E", "-O", "fair", "--prefetch-multiplier=2"),
    )
    try:
        wait_for(
            lambda: (
                '{"celery@cli-0": {"ok": "pong"}}'
                in run_pgtasks("-A", app, "status", "-j", "-d", "celery@cli-0", url=pg_url).stdout
            ),
            timeout=60,
            what="worker online",
        )
        ping = run_pgtasks("-A", app, "inspect", "ping", "-d", "celery@cli-0", url=pg_url)
        assert ping.returncode == 0 and "->  celery@cli-0: OK" in ping.stdout and "pong" in ping.stdout
        # status, as Celery's: a line per node and the count, after --json and with -q too
        status = run_pgtasks("-A", app, "status", url=pg_url)
        assert (status.returncode, status.stdout) == (0, "->  celery@cli-0: OK\n\n1 node online.\n")
        status_json = run_pgtasks("-A", app, "status", "--json", url=pg_url)
        assert status_json.stdout == '{"celery@cli-0": {"ok": "pong"}}\n\n1 node online.\n'
        status_quiet = run_pgtasks("-q", "-A", app, "status", url=pg_url)
        assert status_quiet.stdout == " celery@cli-0: OK\n\n1 node online.\n", status_quiet.stderr
        ping_quiet = run_pgtasks("-A", app, "inspect", "ping", "--quiet", url=pg_url)
        assert ping_quiet.stdout == " celery@cli-0: OK\n        pong\n" and ping_quiet.stderr == ""
        stats = run_pgtasks("-A", app, "inspect", "stats", url=pg_url)
        assert '"pid"' in stats.stdout and "1 node online." in stats.stdout
        sent = run_pgtasks(
            "-A",
            app,
            "call",
            "tests.compat.apps.results_app.add",
            "--args=[20, 22]",
            "--serializer=json",
            "--exchange=tasks",
            "--routing-key=default",
            url=pg_url,
        )
        task_id = sent.stdout.strip()
        assert sent.returncode == 0 and len(task_id) == 36
        proj.app.conf.broker_url = pg_url
        assert proj.app.AsyncResult(task_id).get(timeout=30) == 42
        shown = run_pgtasks("-A", app, "result", task_id, url=pg_url)
        assert shown.stdout.strip() == "42"
        registered = run_pgtasks("-A", app, "inspect", "registered", url=pg_url)
        assert "tests.compat.apps.results_app.add" in registered.stdout
        named = run_pgtasks("-A", app, "inspect", "registered", "name", url=pg_url)
        assert "tests.compat.apps.results_app.add [name=tests.compat.apps.results_app.add]" in named.stdout
        # control: Celery's remote control commands, answered by the worker, printed as Celery's
        beat = run_pgtasks("-A", app, "control", "heartbeat", url=pg_url)
        assert beat.returncode == 0 and beat.stdout == "->  celery@cli-0: OK\n        heartbeat\n"
        added = run_pgtasks("-A", app, "control", "-j", "add_consumer", "extra", url=pg_url)
        assert json.loads(added.stdout) == [{"celery@cli-0": {"ok": "add consumer extra"}}]
        waiting = proj.add.apply_async((3, 3), countdown=300)
        revoked = run_pgtasks("-A", app, "control", "revoke", waiting.id, url=pg_url)
        assert (
            revoked.stdout == f"->  celery@cli-0: OK\n        tasks {{'{waiting.id}'}} flagged as revoked\n"
        )
        assert waiting.state == "REVOKED"
        held = proj.block.delay(str(tmp_path / "never"), 120)
        wait_for(lambda: _running(held.id), timeout=60, what="a running task")
        stopped = run_pgtasks("-A", app, "control", "terminate", "TERM", held.id, url=pg_url)
        assert stopped.stdout == f"->  celery@cli-0: OK\n        terminate: {held.id}\n", stopped.stderr
        assert held.state == "REVOKED"
        (tmp_path / "never").touch()  # a thread cannot be killed: the body ends, its outcome is fenced out
        elsewhere = run_pgtasks("-A", app, "control", "-d", "celery@nobody", "heartbeat", url=pg_url)
        assert elsewhere.returncode == 69 and "No nodes replied within time constraint" in elsewhere.stderr
        down = run_pgtasks("-A", app, "control", "shutdown", url=pg_url)
        assert down.returncode == 0 and "shutting down" in down.stdout
        process.wait(timeout=60)  # a warm shutdown, asked from the command line
    finally:
        (tmp_path / "never").touch()
        output = stop(process)
    assert "ignoring Celery option --prefetch-multiplier" not in output  # a pgtasks flag too
    for flag in ("--without-gossip", "-E", "-O"):
        assert f"ignoring Celery option {flag}" in output
    assert "Got shutdown from remote" in output and process.returncode == 0
    later = proj.add.apply_async((1, 1), countdown=300)
    elsewhere = proj.add.apply_async((2, 2), countdown=300, queue="named")
    but_named = run_pgtasks("-A", app, "purge", "-f", "-X", "named", url=pg_url)
    assert but_named.returncode == 0 and "Purged 1 message from" in but_named.stdout
    assert later.state == "REVOKED" and elsewhere.state == "PENDING"
    only_named = run_pgtasks("-A", app, "purge", "-f", "-Q", "named,absent", url=pg_url)
    assert only_named.returncode == 0
    assert only_named.stdout == "Purged 1 message from 2 known task queues.\n"
    assert elsewhere.state == "REVOKED"
    purged = run_pgtasks("-A", app, "purge", "-f", url=pg_url)
    assert purged.returncode == 0 and purged.stdout.startswith("No messages purged from ")
    nobody = run_pgtasks("-A", app, "inspect", "ping", url=pg_url)
    assert nobody.returncode == 69 and "No nodes replied" in nobody.stderr
    kept = run_pgtasks("-A", app, "control", "revoke", "not-sent-yet", url=pg_url)
    assert kept.returncode == 0 and "no worker is alive: it is kept in the database" in kept.stdout
    missing = run_pgtasks("-A", app, "result", "no-such-id", url=pg_url)
    assert missing.returncode == 1 and "no task with id" in missing.stderr
    proj.app.close()


@pytest.mark.parametrize(
    ("pool", "sent_by"),
    [("threads", "command"), ("prefork", "command"), ("solo", "api"), ("asyncio", "api")],
)
def test_remote_shutdown_is_a_warm_shutdown_with_exit_status_0(
    pg_url: str, tmp_path: Path, pool: str, sent_by: str
) -> None:
    """``celery control shutdown -d node`` (or ``app.control.shutdown``) stops the worker as
    Celery's stops: "Got shutdown from remote", the running task finishes, exit status 0."""
    app, node, release = "tests.compat.apps.results_app", f"celery@down-{pool}", tmp_path / "release"
    proj.app.conf.broker_url = pg_url
    process = worker_process(pg_url, tmp_path / "ledger", node, app=app, pool=pool, concurrency=1)
    try:
        held = proj.block.delay(str(release), 120)
        wait_for(lambda: _running(held.id), timeout=60, what="a running task")
        if sent_by == "command":
            down = run_pgtasks("-A", app, "control", "shutdown", "-d", node, url=pg_url)
            assert (down.returncode, down.stdout) == (0, f"->  {node}: OK\n        shutting down\n")
        else:
            replies = proj.app.control.shutdown(destination=[node], reply=True, timeout=30)
            assert replies == [{node: {"ok": "shutting down"}}]
        # A supervisor stopping the draining worker: its first SIGTERM keeps the shutdown warm.
        process.send_signal(signal.SIGTERM)
        release.touch()  # the warm shutdown waits for the running task
        process.wait(timeout=60)
        assert held.state == "SUCCESS" and held.result == "slept"
    finally:
        release.touch()
        output = stop(process)
        proj.app.close()
    assert process.returncode == 0, output
    assert "Got shutdown from remote" in output and "warm shutdown" in output
    assert "cold shutdown" not in output
    assert "CRITICAL" not in output and "unexpectedly" not in output


def test_result_waits_for_the_task_and_fails_as_get_does(pg_url: str, tmp_path: Path) -> None:
    """``celery result ID`` is ``get()``: it waits (no timeout), prints the value, and exits 1
    with the exception of a failed or revoked task."""
    app = "tests.compat.apps.results_app"
    proj.app.conf.broker_url = pg_url
    sent = {
        "value": proj.add.apply_async((20, 22), queue="later"),
        "failure": proj.fail.apply_async(("no luck",), queue="later"),
        "revoked": proj.add.apply_async((1, 1), queue="later"),
    }
    waiting = {
        kind: spawn_pgtasks("-A", app, "result", result.id, env=cli_env(pg_url))
        for kind, result in sent.items()
    }
    worker = None
    try:
        for kind, command in waiting.items():  # no worker consumes "later" yet: each one waits
            with pytest.raises(subprocess.TimeoutExpired):
                command.communicate(timeout=3 if kind == "value" else 0.1)
        sent["revoked"].revoke()
        worker = worker_process(
            pg_url, tmp_path / "ledger", "celery@later", app=app, extra_args=("-Q", "later")
        )
        done = {
            kind: (command.communicate(timeout=60)[0], command.returncode)
            for kind, command in waiting.items()
        }
    finally:
        for command in waiting.values():
            if command.poll() is None:
                command.kill()
        if worker is not None:
            stop(worker)
        proj.app.close()
    assert done["value"] == ("42\n", 0)
    failure, status = done["failure"]
    assert status == 1 and failure.startswith("Traceback (most recent call last):\n"), failure
    assert failure.endswith("tests.compat.apps.results_app.AppError: no luck\n"), failure
    assert done["revoked"] == ("celery.exceptions.TaskRevokedError: revoked\n", 1)
    traceback_only = run_pgtasks(
        "-A", app, "result", "--traceback", "-t", "some.name", sent["failure"].id, url=pg_url
    )
    assert traceback_only.returncode == 0 and traceback_only.stdout.rstrip("\n") == failure.rstrip("\n")


def test_purge_reads_its_answer_from_standard_input_also_when_it_is_not_a_terminal(
    sqlite_url: str,
) -> None:
    """``echo y | celery purge -Q qa`` purges, as Celery's prompt reads any standard input;
    another answer, or none (EOF), aborts with exit status 1 and purges nothing."""
    proj.app.conf.broker_url = sqlite_url
    try:
        waiting = proj.add.apply_async((1, 1), queue="qa")

        def purge(answer: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                cli_argv("-A", "tests.compat.apps.results_app", "purge", "-Q", "qa"),
                input=answer,
                cwd=REPO,
                env=cli_env(sqlite_url),
                capture_output=True,
                text=True,
                timeout=120,
            )

        for answer in ("no\n", "", "maybe\n"):
            kept = purge(answer)
            assert (kept.returncode, kept.stderr) == (1, "Aborted!\n"), (answer, kept.stderr)
            assert kept.stdout.endswith("Are you sure you want to delete all tasks? [y/N]: ")
            assert waiting.state == "PENDING"
        purged = purge("Yes\n")
        assert purged.returncode == 0, purged.stderr
        assert purged.stdout.endswith("[y/N]: Purged 1 message from 1 known task queue.\n")
        assert waiting.state == "REVOKED"
    finally:
        proj.app.close()


def test_inspect_help_gives_the_exit_status_it_exits_with(sqlite_url: str) -> None:
    helped = run_pgtasks("inspect", "--help")
    text = " ".join(helped.stdout.split())
    assert "Exit 0 when at least one worker replies, 69 when none does" in text, text
    nobody = run_pgtasks("-A", "tests.compat.apps.results_app", "inspect", "ping", url=sqlite_url)
    assert nobody.returncode == 69 and "No nodes replied within time constraint" in nobody.stderr


def _running(task_id: str) -> bool:
    task = proj.app.get_task(task_id, steps=False)
    return task is not None and task.status is Status.PENDING


def test_django_style_project_worker(pg_url: str, tmp_path: Path) -> None:
    from tests.compat.apps.django_proj.celery import app
    from tests.compat.apps.django_proj.orders import tasks

    app.set_current()  # shared tasks run on the current app: other tests of this process made others
    app.conf.broker_url = pg_url
    env = {"DJANGO_SETTINGS_MODULE": "tests.compat.apps.django_proj.settings"}
    process = worker_process(
        pg_url,
        tmp_path / "ledger",
        "",  # no -n: Celery's default node name, celery@<host>
        app="tests.compat.apps.django_proj",
        extra_env=env,
        extra_args=("-Q", "django_default,shipping"),
    )
    try:
        total = tasks.total.delay([1, 2, 3])
        shipped = tasks.ship.delay(7)
        assert total.queue == "django_default" and shipped.queue == "shipping"
        assert total.get(timeout=60) == 6 and shipped.get(timeout=60) == "shipped 7"
        assert total.worker == f"celery@{socket.gethostname()}"
        # a Kubernetes probe's line: `celery -A proj inspect ping -d celery@$HOSTNAME`
        probe = ("-A", "tests.compat.apps.django_proj", "inspect", "ping", "-d", total.worker)
        ping = run_pgtasks(*probe, url=pg_url, env=env)
        assert ping.returncode == 0 and f"{total.worker}: OK" in ping.stdout, ping.stderr
    finally:
        stop(process)
        app.close()


def test_app_start_runs_the_pgtasks_command_with_that_app(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``app.start(argv)`` reaches the command line through the installed ``pgtasks`` script
    (compat never imports pgtasks.cli) and runs it with this very app object."""
    from pgtasks.compat.bridge.refused import imported_refused

    for name in imported_refused():  # imported by other tests of this process, not by this app
        monkeypatch.delitem(sys.modules, name)
    app = Celery("started", broker=sqlite_url)
    try:
        assert app.start(["celery-check"]) == 0
        assert sys.modules["_pgtasks_started_app"].app is app
    finally:
        app.close()
    out = capsys.readouterr().out
    # The app has the @app.task tasks of the test modules imported before (shared with every app
    # finalized later, as Celery's): some use options the check calls ignored, none refused ones.
    assert "pgtasks supports every Celery setting and feature this application uses" in out or (
        " 0 not supported, " in out
    )


def test_celery_check_reads_django_style_settings(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Settings read through ``config_from_object(..., namespace="CELERY")`` are checked too,
    named as the project wrote them; django-celery-beat's scheduler is supported."""
    settings = {
        "CELERY_BROKER_URL": sqlite_url,
        "CELERY_BEAT_SCHEDULER": "django_celery_beat.schedulers:DatabaseScheduler",
        "CELERY_WORKER_SEND_TASK_EVENTS": True,
        "CELERY_TASK_DEFAULT_RATE_LIMIT": "1/s",
        "SECRET_KEY": "not-a-setting-of-celery",
    }
    app = Celery("django_style")
    app.config_from_object(settings, namespace="CELERY")
    app.conf.task_acks_late = True
    try:
        assert app.start(["celery-check"]) == 1
    finally:
        app.close()
    out = capsys.readouterr().out
    assert "setting CELERY_WORKER_SEND_TASK_EVENTS (worker_send_task_events)" in out
    assert (
        "setting CELERY_TASK_DEFAULT_RATE_LIMIT (task_default_rate_limit)" in out and "not supported" in out
    )
    assert "setting task_acks_late " in out
    assert "beat_scheduler" not in out and "SECRET_KEY" not in out and "secret" not in out.lower()
