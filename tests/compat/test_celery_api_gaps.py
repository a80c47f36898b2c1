"""Celery API entries that real projects hit: ``~sig``, NotRegistered for a task no worker
has, QueueNotFound with ``task_create_missing_queues=False``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.compat import install
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for

install()

from celery import chain  # noqa: E402
from celery.exceptions import NotRegistered, QueueNotFound  # noqa: E402
from kombu import Queue  # noqa: E402

from tests.compat.apps import results_app as proj  # noqa: E402


def test_invert_sends_and_waits_and_unknown_tasks_fail_as_not_registered(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with celery_worker(
        proj.app, "tests.compat.apps.results_app", pg_url, tmp_path / "ledger", monkeypatch, "w-gaps"
    ):
        assert ~proj.add.s(2, 3) == 5
        assert ~chain(proj.add.s(1, 2), proj.add.s(10)) == 13
        unknown = proj.app.send_task("no.worker.has.this")
        with pytest.raises(NotRegistered) as caught:
            unknown.get(timeout=60)
        assert isinstance(caught.value, KeyError) and "no.worker.has.this" in str(caught.value)


def test_a_missing_queue_is_refused_when_queues_are_not_created(sqlite_url: str) -> None:
    from celery import Celery

    app = Celery("strict", broker=sqlite_url)
    app.conf.task_queues = [Queue("known")]
    app.conf.task_default_queue = "known"

    @app.task(name="strict.t")
    def t() -> None:
        return None

    assert t.apply_async(queue="typo").state == "PENDING"  # Celery's default: created as needed
    app.conf.task_create_missing_queues = False
    with pytest.raises(QueueNotFound, match="Queue 'typo' missing from task_queues"):
        t.apply_async(queue="typo")
    assert t.apply_async(queue="known").state == "PENDING"
    assert t.delay().state == "PENDING"
    app.close()


def test_inspect_registered_describes_each_worker_as_it_runs(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "tests.compat.apps.results_app"
    with celery_worker(proj.app, module, pg_url, tmp_path / "ledger", monkeypatch, "w-registered"):

        @proj.app.task(name="only.in.this.process")
        def local_only() -> None:
            return None

        wait_for(
            lambda: "celery@w-registered" in (proj.app.control.inspect().ping() or {}),
            timeout=60,
            what="the worker to answer ping",
        )
        registered = proj.app.control.inspect().registered()
        assert registered is not None
        names = registered["celery@w-registered"]
        assert "tests.compat.apps.results_app.add" in names
        assert "only.in.this.process" not in names  # the caller's own task, not the worker's
        assert not any(n.startswith("celery.") for n in names)
        stats = proj.app.control.inspect().stats()
        assert stats is not None and stats["celery@w-registered"]["pool"]["implementation"] == "threads"


def test_remote_control_commands_reach_the_workers_and_come_back_with_their_replies(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgtasks.engine.errors import ConfigurationError

    control = proj.app.control
    with celery_worker(
        proj.app, "tests.compat.apps.results_app", pg_url, tmp_path / "ledger", monkeypatch, "w-remote"
    ):
        node = "celery@w-remote"
        wait_for(
            lambda: node in (control.inspect().ping() or {}), timeout=60, what="the worker to answer ping"
        )

        def queues() -> set[str]:
            return {q["name"] for q in (control.inspect().active_queues() or {}).get(node, [])}

        assert control.add_consumer("extra", reply=True, timeout=30) == [{node: {"ok": "add consumer extra"}}]
        assert "extra" in queues()
        assert proj.add.apply_async((20, 22), queue="extra").get(timeout=60) == 42
        assert control.cancel_consumer("extra", destination=[node], reply=True, timeout=30) == [
            {node: {"ok": "no longer consuming from extra"}}
        ]
        assert "extra" not in queues()
        # a threads pool keeps its size (prefork's grow and shrink: tests/acceptance/test_flower_api.py)
        grown = control.pool_grow(2, reply=True, timeout=30)
        assert grown == [
            {node: {"error": "ValueError('the threads pool keeps the size it starts with (-c)')"}}
        ]
        assert control.pool_shrink(reply=True, timeout=30)[0][node]["error"].startswith("ValueError(")
        assert control.autoscale(4, 1, reply=True, timeout=30) == [
            {node: {"error": "ValueError('Autoscale not enabled')"}}
        ]
        assert control.enable_events(reply=True, timeout=30) == [
            {node: {"ok": "task events already enabled"}}
        ]
        assert "cannot be disabled" in control.disable_events(reply=True, timeout=30)[0][node]["error"]
        assert control.broadcast("no_such_command", reply=True, timeout=30) == [
            {node: {"error": "unknown command 'no_such_command'"}}
        ]
        seen: list[dict[str, object]] = []
        assert control.broadcast(
            "heartbeat", pattern="celery@w-*", reply=True, timeout=30, callback=seen.append
        ) == [{node: {"ok": "heartbeat"}}]
        assert seen == [{node: {"ok": "heartbeat"}}]
        assert control.broadcast("heartbeat", pattern="celery@other-*", reply=True) == []
        assert control.broadcast("heartbeat", destination=["celery@nobody"], reply=True) == []
        with pytest.raises(ConfigurationError, match="matcher must be one of glob, pcre, not 'regex'"):
            control.broadcast("heartbeat", pattern="x", matcher="regex")
        with pytest.raises(NotImplementedError, match="hold no elections"):
            control.election("id", "topic")
        assert control.shutdown() is None  # no reply asked: the command is sent all the same
        wait_for(lambda: node not in (control.inspect().ping() or {}), timeout=60, what="the worker to stop")
