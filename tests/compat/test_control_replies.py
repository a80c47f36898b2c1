"""``app.control.revoke`` / ``terminate`` with ``reply=True``, and ``app.control.broadcast`` of
Celery's inspect commands and of ``revoke``: the replies Celery's workers give, in its shape
(``[{node: reply}]``), from a real worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.exceptions import TaskRevokedError

from tests.compat.apps import results_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for

NODE = "celery@replies-w1"


@pytest.fixture
def worker(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    module, path = "tests.compat.apps.results_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "replies-w1"):
        wait_for(lambda: NODE in (proj.app.control.inspect().ping() or {}), timeout=60, what="the worker")
        yield path


def test_revoke_and_terminate_reply_as_celerys_workers(worker: Path, tmp_path: Path) -> None:
    control = proj.app.control
    assert control.revoke("not-sent-yet", reply=True) == [
        {NODE: {"ok": "tasks {'not-sent-yet'} flagged as revoked"}}
    ]
    assert control.revoke(["a1", "a2"]) is None  # without reply, as Celery
    with pytest.raises(TaskRevokedError):
        proj.add.apply_async((1, 1), task_id="not-sent-yet").get(timeout=30)
    assert control.terminate("unknown-to-all", reply=True) == [{NODE: {"ok": "terminate: tasks unknown"}}]
    release = tmp_path / "release"
    running = proj.block.delay(str(release))
    wait_for(
        lambda: running.state == "STARTED" or bool(control.inspect().active()[NODE]), timeout=30, what="start"
    )
    seen: list[dict[str, object]] = []
    replies = control.revoke(running.id, terminate=True, reply=True, callback=seen.append)
    assert replies == seen == [{NODE: {"ok": f"terminate: {running.id}"}}]
    assert control.revoke("x", reply=True, destination=["celery@nobody"]) == []
    release.touch()


def test_broadcast_answers_celerys_inspect_commands(worker: Path, tmp_path: Path) -> None:
    control = proj.app.control
    assert control.broadcast("ping", reply=True) == [{NODE: {"ok": "pong"}}]
    assert control.broadcast("ping") is None
    (stats,) = control.broadcast("stats", reply=True)
    assert "pool" in stats[NODE]
    for name in ("registered", "dump_tasks"):
        (registered,) = control.broadcast(name, reply=True)
        assert any(line.startswith(proj.add.name) for line in registered[NODE]), name
    release = tmp_path / "release"
    running = proj.block.delay(str(release))
    wait_for(lambda: bool(control.inspect().active()[NODE]), timeout=30, what="the task to start")
    (active,) = control.broadcast("active", reply=True)
    assert [r["id"] for r in active[NODE]] == [running.id]
    (found,) = control.broadcast("query_task", arguments={"ids": [running.id]}, reply=True)
    assert found[NODE][running.id][0] == "active"
    assert control.broadcast("ping", reply=True, limit=0) == []
    assert control.broadcast("ping", reply=True, destination=["celery@nobody"]) == []
    release.touch()
    assert running.get(timeout=30) == "slept"


def test_broadcast_revoke_revokes(worker: Path) -> None:
    control = proj.app.control
    assert control.broadcast("revoke", arguments={"task_id": "by-broadcast"}) is None
    assert "by-broadcast" in control.inspect().revoked()[NODE]
    with pytest.raises(TaskRevokedError):
        proj.add.apply_async((2, 2), task_id="by-broadcast").get(timeout=30)
    with pytest.raises(TypeError, match="task_id"):
        control.broadcast("revoke", arguments={})


def test_terminate_stops_the_task_at_once_not_at_the_next_heartbeat(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``revoke(terminate=True)`` wakes the worker running the task (a NOTIFY, as for its
    commands), as Celery's broadcast reaches its worker at once. The kill waited for the
    worker's next heartbeat, a quarter of the lease: 30 s here, 7.5 s by default (celery-
    director's cancel saw its task stopped 6 s later)."""
    log, node = tmp_path / "worker.log", "celery@terminate-w1"
    module, ledger = "tests.compat.apps.results_app", tmp_path / "ledger"
    options = {"lease_seconds": 120, "pool": "prefork", "concurrency": 1, "output": log}
    with celery_worker(proj.app, module, pg_url, ledger, monkeypatch, "terminate-w1", **options):
        running = proj.block.delay(str(tmp_path / "never"), 300)
        control = proj.app.control
        wait_for(lambda: bool((control.inspect().active() or {}).get(node)), timeout=60, what="the start")
        control.revoke(running.id, terminate=True)
        killed = "terminated (revoked with terminate=True)"
        wait_for(lambda: killed in log.read_text(), timeout=5, what="the kill")
        assert running.state == "REVOKED"
