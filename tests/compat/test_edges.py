"""Edge behaviours of Celery on a real `pgtasks worker` (one for the module), as the real
Celery 5.7 on Redis was seen doing them (tests/compat/apps/edges_probe.py holds the scenarios
and what each must observe, PGTASKS where pgtasks differs; test_celery_reference.py runs them
against the real Celery)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from celery.exceptions import TaskRevokedError
from celery.result import AsyncResult
from celery.signals import task_revoked

from pgtasks.sysdb.records import Status
from tests.compat.apps import edges_app as proj
from tests.compat.apps.edges_probe import EXPECTED, PGTASKS, run
from tests.support.celery_worker import celery_worker, module_celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of

MODULE = "tests.compat.apps.edges_app"


@pytest.fixture(scope="module")
def ledger(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("edges")
    with module_celery_worker(proj.app, MODULE, pg_server_url, folder, "edges-w1", concurrency=2) as path:
        yield path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_as_celery(ledger: Path, name: str) -> None:
    assert run(name, ledger) == {**EXPECTED[name], **PGTASKS.get(name, {})}


def test_a_held_task_that_expires_sends_task_revoked(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task a prefork worker claimed ahead (its one child busy) whose ``expires`` passes
    before the child gets to it: the worker ends it REVOKED unrun and sends ``task_revoked``
    (expired=True), once, as Celery's worker does for a prefetched task that expired."""
    go = tmp_path / "go"
    with celery_worker(
        proj.app,
        MODULE,
        pg_url,
        tmp_path / "ledger",
        monkeypatch,
        "edges-held",
        pool="prefork",
        concurrency=1,
    ) as ledger:
        blocker = proj.blocks_until.delay(str(go), "blocker")
        wait_for(
            lambda: any(line.startswith("started blocker") for line in lines_of(ledger)),
            timeout=60,
            what="the blocker",
        )
        late = proj.add.apply_async((1, 2), {"token": "late"}, expires=1.0)
        engine = proj.app.engine

        def held() -> bool:
            record = engine.read_task(late.id, fresh=True)
            return record is not None and record.status is Status.PENDING

        wait_for(held, timeout=30, what="the worker to claim the task ahead")
        record = engine.read_task(late.id, fresh=True)
        assert record is not None and record.expires_at_epoch_ms is not None
        expires = record.expires_at_epoch_ms
        wait_for(lambda: engine.worker_api.now_ms() > expires, timeout=30, what="the expiry to pass")
        go.touch()
        blocker.get(timeout=60)
        with pytest.raises(TaskRevokedError):
            late.get(timeout=60)
        assert AsyncResult(late.id, app=proj.app).state == "REVOKED"
        wait_for(
            lambda: any(line.startswith("revoked late") for line in lines_of(ledger)),
            timeout=30,
            what="task_revoked",
        )
    revoked = [
        json.loads(line.split(" ", 2)[2]) for line in lines_of(ledger) if line.startswith("revoked late")
    ]
    name = "tests.compat.apps.edges_app.add"
    expected = {"request_id": late.id, "request_task": name, "sender": name}
    assert revoked == [{**expected, "expired": True, "signum": None, "terminated": False}]
    assert not any(line.startswith("ran late") for line in lines_of(ledger))


def test_the_test_worker_sends_task_revoked_for_an_expired_task(sqlite_url: str) -> None:
    """``celery.contrib.testing.worker.start_worker`` does as `pgtasks worker`: its task_revoked
    for a task it found expired, in this process."""
    app = Celery("edges-test-worker", broker=sqlite_url)
    heard: list[tuple[str, str, bool]] = []

    @app.task(name="edges.expiring")
    def expiring() -> None:
        raise AssertionError("an expired task must not run")

    def on_revoked(sender: Any = None, request: Any = None, expired: bool = False, **kwargs: Any) -> None:
        heard.append((sender.name, request.id, expired))

    task_revoked.connect(on_revoked, weak=False)
    try:
        with start_worker(app, perform_ping_check=False):
            late = expiring.apply_async(expires=dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1))
            with pytest.raises(TaskRevokedError):
                late.get(timeout=60)
            wait_for(lambda: bool(heard), timeout=30, what="task_revoked")
    finally:
        task_revoked.disconnect(on_revoked)
        app.close()
    assert heard == [("edges.expiring", late.id, True)]
