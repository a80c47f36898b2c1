"""Celery's signals and task hooks in a real `pgtasks worker` (prefork, so worker_process_init
fires in each child) and in the sending process."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.compat.apps import signals_app as proj
from tests.support.cli import cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines
from tests.support.processes import stop, worker_process


def test_worker_task_and_publish_signals(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("PGTASKS_TEST_LEDGER", str(ledger))
    proj.app.conf.broker_url = pg_url
    process = worker_process(
        pg_url,
        ledger,
        "signals-w",
        app="tests.compat.apps.signals_app",
        pool="prefork",
        concurrency=1,
        extra_args=("-B",),
    )
    try:
        wait_for(lambda: "signal worker_ready" in lines(ledger), timeout=60, what="worker_ready")
        ok = proj.double.delay(21)
        bad = proj.broken.delay()
        again = proj.retried.delay()
        assert ok.get(timeout=60) == 42
        with pytest.raises(ValueError):
            bad.get(timeout=60)
        assert again.get(timeout=60) == "done"
    finally:
        output = stop(process, signal.SIGTERM)
    events = lines(ledger)
    assert events[0] == "signal after_setup_logger INFO", output
    assert "these added to app.steps are not run: worker:AuditStep" in output
    assert "signal worker_init signals" in events
    # the app's loader (Celery(loader=LedgerLoader)): its hooks where Celery's worker calls them
    starting = ["signal import_modules signals", "loader on_worker_init", "signal worker_init signals"]
    assert [e for e in events if e in starting] == starting
    assert "loader on_worker_process_init" in events
    assert events[-2:] == ["loader on_worker_shutdown", "signal worker_shutdown"], output
    assert any(e.startswith("signal worker_process_init") for e in events)
    assert events.index("signal worker_init signals") < events.index("signal worker_ready")
    assert events.index("signal beat_embedded_init BeatThread") < events.index("signal worker_ready")
    name = "tests.compat.apps.signals_app.double"
    # publish signals in this process: sender is the task name, routing key the queue
    assert f"signal before_task_publish {name} {ok.id} celery [21]" in events
    assert f"signal after_task_publish {name} {ok.id} celery" in events
    ours = [e for e in events if ok.id in e and "publish" not in e]
    assert ours == [
        f"signal task_received {ok.id} {name} 0 [21]",  # by the worker that claimed it
        f"loader on_task_init {ok.id}",
        f"signal task_prerun {ok.id} {name} True [21]",
        f"hook before_start {ok.id}",
        f"hook on_success {ok.id} 42",
        f"signal task_success {ok.id} 42",
        f"hook after_return {ok.id} SUCCESS",
        f"signal task_postrun {ok.id} SUCCESS",
    ]
    after_run = events[events.index(f"signal task_postrun {ok.id} SUCCESS") + 1 :]
    assert after_run[0] == "loader on_process_cleanup"
    failed = [
        e
        for e in events
        if bad.id in e and not any(w in e for w in ("publish", "prerun", "loader", "received"))
    ]
    assert failed == [
        f"hook before_start {bad.id}",
        f"hook on_failure {bad.id} ValueError einfo",
        f"signal task_failure {bad.id} ValueError",
        f"hook after_return {bad.id} FAILURE",
        f"signal task_postrun {bad.id} FAILURE",
    ]
    retried = [e for e in events if again.id in e and ("retry" in e or "postrun" in e)]
    assert retried == [
        f"hook on_retry {again.id} OSError",
        f"signal task_retry {again.id} Retry",
        f"signal task_postrun {again.id} RETRY",
        f"signal task_postrun {again.id} SUCCESS",
    ]
    # task_success was connected with sender=double: broken and retried never reach it
    assert not any(e.startswith("signal task_success") and again.id in e for e in events)


def test_signal_receivers_connect_disconnect_and_survive_errors() -> None:
    from celery.signals import task_success

    heard: list[tuple[object, object]] = []

    def receiver(sender=None, result=None, **kwargs):
        heard.append((sender, result))

    def faulty(**kwargs):
        raise RuntimeError("receiver bug")

    task_success.connect(receiver, weak=False, dispatch_uid="uid-1")
    task_success.connect(receiver, weak=False, dispatch_uid="uid-1")  # same uid: once
    task_success.connect(faulty, sender="only-this", weak=False)
    responses = task_success.send(sender="only-this", result=5)
    assert heard == [("only-this", 5)]
    assert isinstance(dict(responses)[faulty], RuntimeError)
    task_success.send(sender="other", result=6)
    assert heard[-1] == ("other", 6) and len(heard) == 2
    assert task_success.disconnect(dispatch_uid="uid-1") and task_success.disconnect(
        faulty, sender="only-this"
    )
    task_success.send(sender="x", result=7)
    assert len(heard) == 2


def test_pgtasks_beat_sends_beat_init(sqlite_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    env = cli_env(sqlite_url, {"PGTASKS_TEST_LEDGER": str(ledger)})
    process = spawn_pgtasks("beat", "-A", "tests.compat.apps.signals_app", env=env)
    try:
        wait_for(lambda: "signal beat_init Beat" in lines(ledger), timeout=60, what="beat_init")
    finally:
        output = stop(process, signal.SIGTERM)
    assert process.returncode == 0, output
    # as Celery's beat: the app loader's init_worker (imports, then on_worker_init) first
    events = lines(ledger)
    assert events.index("loader on_worker_init") < events.index("signal beat_init Beat"), events


def test_task_revoked_is_sent_by_the_process_that_revokes(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("PGTASKS_TEST_LEDGER", str(ledger))
    proj.app.conf.broker_url = sqlite_url
    try:
        waiting = proj.double.apply_async((1,), countdown=300)
        waiting.revoke()
        waiting.revoke()  # already revoked: not sent again
        proj.app.control.revoke(waiting.id, terminate=True)
        name = "tests.compat.apps.signals_app.double"
        assert [e for e in lines(ledger) if "task_revoked" in e] == [
            f"signal task_revoked {name} {waiting.id} False False"
        ]
        assert waiting.state == "REVOKED"
    finally:
        proj.app.close()
