"""Celery's signals and task hooks in a real `pgtasks worker` (prefork, so worker_process_init
fires in each child) and in the sending process."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from kombu.exceptions import EncodeError

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
        unknown = proj.app.send_task("no.worker.has.this")
        unencodable = proj.unencodable.delay()
        kept, ignored = proj.failing_but_kept.delay(), proj.failing_and_ignored.delay()
        command = proj.failing_command.delay()
        waiting = proj.retry_without_reason.delay()
        exits, base = proj.exits.delay(), proj.raises_base_exception.delay()
        rejected = proj.rejects.delay()
        forked = proj.forks.delay()
        by_hand_failed, by_hand_done = proj.fails_by_hand.delay(), proj.succeeds_by_hand.delay()
        assert ok.get(timeout=60) == 42
        with pytest.raises(ValueError):
            bad.get(timeout=60)
        assert again.get(timeout=60) == "done"
        with pytest.raises(KeyError):  # NotRegistered
            unknown.get(timeout=60)
        with pytest.raises(EncodeError, match="object is not JSON serializable"):
            unencodable.get(timeout=60)
        with pytest.raises(subprocess.CalledProcessError) as raised:
            command.get(timeout=60)
        assert raised.value.returncode == 3 and raised.value.cmd == ["false"]
        read = proj.app.AsyncResult
        wait_for(lambda: read(kept.id).state == "FAILURE", timeout=60, what="the kept failure")
        assert isinstance(read(kept.id).result, ValueError) and "ValueError: kept" in read(kept.id).traceback
        wait_for(lambda: read(waiting.id).state == "RETRY", timeout=60, what="the retry to wait")
        assert read(waiting.id).info is None  # retried without an exception: no reason stored
        assert read(waiting.id).retries == 0  # the count of the run that asked, as Celery stores it
        waiting.revoke()
        finished = lambda: (record := read(ignored.id).record()) is not None and record.status.is_terminal  # noqa: E731
        wait_for(finished, timeout=60, what="the ignored failure")
        assert read(ignored.id).state == "PENDING"  # without store_errors_even_if_ignored
        # the worker survives them; each task fails, never stays PENDING
        failed = lambda: all(read(e.id).state == "FAILURE" for e in (exits, base, rejected))  # noqa: E731
        wait_for(failed, timeout=60, what="the tasks that raised a BaseException to fail")
        # Ignore after update_state: the state the task stored by hand is its outcome
        with pytest.raises(ValueError, match="stored by hand"):
            by_hand_failed.get(timeout=60)
        assert read(by_hand_failed.id).state == "FAILURE"
        assert by_hand_done.get(timeout=60) == {"stored": "by hand"}
        assert forked.get(timeout=60) == ["parent", 0]
    finally:
        output = stop(process, signal.SIGTERM)
    events = lines(ledger)
    # Celery's order: the task modules and the loader's hook, worker_init, then the logging
    starting = ["signal import_modules signals", "loader on_worker_init", "signal worker_init signals"]
    assert events[:4] == [*starting, "signal after_setup_logger 20"], output  # logging.INFO, as Celery
    assert "these added to app.steps are not run: worker:AuditStep" in output
    assert "signal worker_init signals" in events
    # the app's loader (Celery(loader=LedgerLoader)): its hooks where Celery's worker calls them
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
        f"signal task_success {ok.id} 42 float True",  # runtime: seconds, as Celery's
        f"hook after_return {ok.id} SUCCESS None",  # no einfo, as from Celery's tracer
        f"signal task_postrun {ok.id} SUCCESS",
    ]
    # the next line of the task's own process: this test process publishes the other tasks
    # meanwhile, and the worker may record the next task's receipt in between
    after_run = [
        e
        for e in events[events.index(f"signal task_postrun {ok.id} SUCCESS") + 1 :]
        if "publish" not in e and not e.startswith("signal task_received")
    ]
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
        f"hook after_return {bad.id} FAILURE None",
        f"signal task_postrun {bad.id} FAILURE",
    ]
    retried = [e for e in events if again.id in e and ("retry" in e or "postrun" in e or "after_return" in e)]
    assert retried == [
        f"hook on_retry {again.id} OSError",
        f"signal task_retry {again.id} Retry",
        f"signal task_postrun {again.id} RETRY",  # no after_return after a retry
        f"hook after_return {again.id} SUCCESS None",
        f"signal task_postrun {again.id} SUCCESS",
    ]
    # a value the serializer cannot store fails the task before on_success, as on Celery
    assert [e for e in events if unencodable.id in e and e.startswith(("hook", "signal task_"))][-4:] == [
        f"hook on_failure {unencodable.id} EncodeError einfo",
        f"signal task_failure {unencodable.id} EncodeError",
        f"hook after_return {unencodable.id} FAILURE None",
        f"signal task_postrun {unencodable.id} FAILURE",
    ]
    # SystemExit or a BaseException of the task's own: as Celery's tracer, no on_failure and
    # no after_return; as its prefork worker, task_failure and task_postrun without a state
    # (the process survives here; Celery's threads pool leaves such a task PENDING)
    for ended, kind in ((exits, "SystemExit"), (base, "OwnBaseException")):
        assert [e for e in events if ended.id in e and e.startswith(("hook", "signal task_"))][-3:] == [
            f"hook before_start {ended.id}",
            f"signal task_failure {ended.id} {kind}",
            f"signal task_postrun {ended.id} None",
        ]
    # Reject(requeue=False): a failure with task_failure, no on_failure (Celery's worker, its
    # Issue #4222); task_rejected is Celery's for a message it cannot decode, never sent here
    assert [e for e in events if rejected.id in e and e.startswith(("hook", "signal task_"))][-3:] == [
        f"hook before_start {rejected.id}",
        f"signal task_failure {rejected.id} Reject",
        f"signal task_postrun {rejected.id} REJECTED",
    ]
    assert not any(e.startswith("signal task_rejected") for e in events)
    # a child the task forked exits before any handler runs in it: one of each
    assert [e for e in events if forked.id in e and e.startswith("hook")] == [
        f"hook before_start {forked.id}",
        f"hook on_success {forked.id} ['parent', 0]",
        f"hook after_return {forked.id} SUCCESS None",
    ]
    # a name the worker does not have: task_unknown, not task_received, as Celery's consumer
    unknown_events = [e for e in events if unknown.id in e and "publish" not in e]
    assert unknown_events == [f"signal task_unknown no.worker.has.this {unknown.id} NotRegistered True None"]
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
    ledger, pidfile, logfile = tmp_path / "ledger", tmp_path / "beat.pid", tmp_path / "beat.log"
    env = cli_env(sqlite_url, {"PGTASKS_TEST_LEDGER": str(ledger)})
    # Celery's beat --pidfile and --logfile (taken as they are: the beat has no node name)
    files = ("--pidfile", str(pidfile), "--logfile", str(logfile))
    process = spawn_pgtasks("beat", "-A", "tests.compat.apps.signals_app", *files, env=env)
    try:
        wait_for(lambda: "signal beat_init Beat" in lines(ledger), timeout=60, what="beat_init")
        assert pidfile.read_text() == f"{process.pid}\n"
    finally:
        output = stop(process, signal.SIGTERM)
    assert process.returncode == 0, output
    assert "beat ready" in logfile.read_text() and not pidfile.exists()
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


SIGNALS_SCRIPT = """
import json
import celery.signals as signals
from celery.utils.dispatch.signal import Signal
print(json.dumps({n: sorted(s.providing_args) for n, s in vars(signals).items() if isinstance(s, Signal)}))
"""


def test_each_signal_provides_the_real_celerys_arguments() -> None:
    import json
    import subprocess

    import celery.signals
    from celery.utils.dispatch.signal import Signal

    from tests.support.redis import celery_python

    done = subprocess.run(
        [str(celery_python()), "-c", SIGNALS_SCRIPT], capture_output=True, text=True, check=True
    )
    ours = {n: sorted(s.providing_args) for n, s in vars(celery.signals).items() if isinstance(s, Signal)}
    assert ours == json.loads(done.stdout)
    assert ours["task_success"] == ["result", "runtime"]


def test_an_error_around_the_body_sends_task_internal_error(sqlite_url: str) -> None:
    """As Celery's tracer: the loader's on_task_init raising is an internal error, sent with
    Celery's arguments, then raised (``apply`` here; a worker fails the task with it)."""
    from celery import Celery
    from celery.loaders.app import AppLoader
    from celery.signals import task_internal_error, task_success

    class BrokenLoader(AppLoader):
        def on_task_init(self, task_id: str, task: object) -> None:
            if getattr(task, "name", None) == "internal.boom":
                raise RuntimeError("loader broke")

    app = Celery("internal", broker=sqlite_url, loader=BrokenLoader, set_as_current=False)

    @app.task(name="internal.boom")
    def boom() -> int:
        return 1

    @app.task(name="internal.fine")
    def fine() -> int:
        return 2

    seen: list[tuple[str, dict[str, object]]] = []

    def on_internal(sender: object = None, **kwargs: object) -> None:
        seen.append(("internal", kwargs))

    def on_success(sender: object = None, **kwargs: object) -> None:
        seen.append(("success", kwargs))

    task_internal_error.connect(on_internal, sender=boom, weak=False)
    task_success.connect(on_success, sender=fine, weak=False)
    try:
        with pytest.raises(RuntimeError, match="loader broke"):
            boom.apply(("x",), {"y": 1})
        assert fine.apply().get() == 2
    finally:
        task_internal_error.disconnect(on_internal, sender=boom)
        task_success.disconnect(on_success, sender=fine)
        app.close()
    [(kind, internal), (ok, success)] = seen
    assert kind == "internal" and ok == "success"
    keys = ["args", "einfo", "exception", "kwargs", "request", "signal", "task_id", "traceback"]
    assert sorted(internal) == keys
    assert (internal["args"], internal["kwargs"]) == (("x",), {"y": 1})
    assert isinstance(internal["exception"], RuntimeError) and internal["task_id"]
    assert sorted(success) == ["result", "runtime", "signal"] and success["result"] == 2
    assert isinstance(success["runtime"], float) and success["runtime"] >= 0
