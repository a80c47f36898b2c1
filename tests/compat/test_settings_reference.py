"""Settings of Celery's configuration reference that a real `pgtasks worker` honours as Celery
5.5's worker on Redis does (measured there with the same tasks): ``task_inherit_parent_priority``
and ``worker_soft_shutdown_timeout`` (the ``--soft-shutdown-timeout`` flag too); one it cannot
(``result_serializer`` unlike ``task_serializer``) said at start and by celery-check; and
celery-check's verdicts on the settings the worker honours."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import pgtasks
from pgtasks.compat.bridge.check import IGNORED, _setting_finding, check_app
from pgtasks.compat.celery import Celery, chain
from tests.support.cli import cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop

APP = "tests.compat.apps.settings_app"


@contextmanager
def worker_of(
    url: str, log: Path, settings: dict[str, object], *flags: str
) -> Iterator[subprocess.Popen[str]]:
    """A worker of APP with ``settings``, ready, stopped at the end."""
    env = cli_env(url, {"APP_SETTINGS": json.dumps(settings)})
    worker = spawn_pgtasks(
        "worker", "-A", APP, "-n", "reference@test", "-c", "2", *flags, env=env, output=log
    )
    try:
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, "the worker to start")
        assert worker.poll() is None, log.read_text()
        yield worker
    finally:
        stop(worker)


def test_tasks_sent_by_a_task_take_its_priority_when_the_app_says_so(sqlite_url: str, tmp_path: Path) -> None:
    """Celery 5.5 on Redis: delay, send_task and both steps of a chain sent by a task of
    priority 7 run with 7 (an explicit priority wins), and with none (0) without the setting;
    a chain's next step and a callback take the priority of the task before them."""
    for inherit, seen in ((True, [7, 7, 2, 7, 7]), (False, [0, 0, 2, 0, 0])):
        sender = Celery("sender", broker=sqlite_url)
        sender.conf.task_inherit_parent_priority = inherit
        log = tmp_path / f"worker-{inherit}.log"
        with worker_of(sqlite_url, log, {"task_inherit_parent_priority": inherit}):
            ids = sender.send_task("settings.spawn", priority=7).get(timeout=60)
            assert [sender.AsyncResult(i).get(timeout=60) for i in ids] == seen, inherit
            prio = sender.signature("settings.priority")
            chained = chain(prio.clone(), prio.clone()).apply_async(priority=6)
            assert (chained.parent.get(timeout=60), chained.get(timeout=60)) == (6, 6 if inherit else 0)
            linked = prio.clone().apply_async(priority=5, link=prio.clone())
            assert linked.get(timeout=60) == 5
            wait_for(lambda sent=linked: bool(sent.children), 30, "the callback to be sent")
            assert linked.children[0].get(timeout=60) == (5 if inherit else 0)
        sender.close()


@pytest.mark.parametrize(
    ("settings", "flags"),
    [({"worker_soft_shutdown_timeout": 1.0}, ()), ({}, ("--soft-shutdown-timeout", "1"))],
    ids=["setting", "flag"],
)
def test_a_stop_waits_the_soft_shutdown_timeout_for_running_tasks(
    sqlite_url: str, tmp_path: Path, settings: dict[str, object], flags: tuple[str, ...]
) -> None:
    """Celery 5.5 waits ``worker_soft_shutdown_timeout`` for running tasks at a cold shutdown,
    which Kubernetes deployments set below their grace period; pgtasks' every stop waits that
    long (else 30 s), then leaves the task to be recovered."""
    sender = Celery("sender", broker=sqlite_url)
    client = pgtasks.Client(sqlite_url)
    log = tmp_path / "worker.log"
    with worker_of(sqlite_url, log, settings, *flags) as worker:
        napping = sender.send_task("settings.nap", (60,))

        def running() -> bool:
            info = client.get_task(napping.id, steps=False)
            return info is not None and info.status is pgtasks.Status.PENDING

        wait_for(running, 30, "the task to run")
        asked = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        waited = time.monotonic() - asked
    assert 1.0 <= waited < 10, (waited, log.read_text())
    assert "ignored" not in log.read_text().split("ready.")[0], log.read_text()
    client.close()
    sender.close()


def test_a_result_serializer_other_than_the_task_serializer_is_said_to_be_unused(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Celery stores a result with ``result_serializer`` (pickle: a set, a date, an object of the
    app's own come back as themselves); a pgtasks row has one serialization, its arguments', so
    the worker and celery-check say the setting is not used and what to set instead."""
    settings: dict[str, object] = {"result_serializer": "pickle", "accept_content": ["json", "pickle"]}
    log = tmp_path / "worker.log"
    with worker_of(sqlite_url, log, settings):
        pass
    assert (
        "pgtasks: warning: result_serializer 'pickle' is not used: a task's result is stored with its "
        "arguments' serializer, task_serializer 'json'; set task_serializer (and accept_content) to "
        "'pickle' for results only it can carry"
    ) in log.read_text()
    app = Celery("checked", broker=sqlite_url)
    app.conf.update(settings)
    [finding] = [f for f in check_app(app) if "result_serializer" in f.what]
    assert (finding.status, finding.note.split(";")[0]) == (
        IGNORED,
        "a task's result is stored with its arguments' serializer, task_serializer 'json'",
    )
    app.conf.task_serializer = "application/x-python-serialize"  # the same serializer, as a type
    assert not [f for f in check_app(app) if "result_serializer" in f.what]
    app.close()


def test_celery_check_does_not_call_ignored_what_the_worker_honours() -> None:
    honoured = ("result_expires", "task_ignore_result", "worker_log_format", "worker_soft_shutdown_timeout")
    assert {name: _setting_finding(name) for name in honoured} == dict.fromkeys(honoured)
    finding = _setting_finding("beat_cron_starting_deadline")
    assert finding is not None and "most recent due time it missed" in finding.note
