"""``self.request.origin`` as Celery sets it: the node name of the process that sent the task,
``gen<pid>@<hostname>`` (Celery's ``anon_nodename()``), from a client and from inside a task
run by a real `pgtasks worker`; the same ``origin`` in the published headers."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import chain
from celery.signals import before_task_publish

from tests.compat.apps import canvas_app as proj
from tests.support.celery_worker import celery_worker


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.canvas_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "origin-w1", concurrency=2):
        yield path


def test_the_origin_is_the_sending_process_node_name(ledger: Path) -> None:
    here = f"gen{os.getpid()}@{socket.gethostname()}"
    published: list[Any] = []

    def on_publish(sender: Any = None, headers: Any = None, **kwargs: Any) -> None:
        published.append(headers["origin"])

    before_task_publish.connect(on_publish, weak=False)
    try:
        sent = proj.origin_seen.delay(True)
    finally:
        before_task_publish.disconnect(on_publish)
    assert published == [here]
    seen = sent.get(timeout=60)
    assert seen["origin"] == here
    child = proj.app.AsyncResult(seen["child"]).get(timeout=60)
    # sent by the worker's process running the parent: its own gen<pid>@host, as in Celery
    assert child["origin"] == f"gen{seen['pid']}@{socket.gethostname()}" != here
    # a canvas is inserted by its sender: every task carries the sender's origin
    steps = chain(proj.origin_seen.si(), proj.origin_seen.si()).delay()
    assert steps.get(timeout=60)["origin"] == steps.parent.get(timeout=60)["origin"] == here
    given = proj.origin_seen.apply_async(origin="elsewhere@host")
    assert given.get(timeout=60)["origin"] == "elsewhere@host"
    assert proj.origin_seen.apply().get()["origin"] is None  # run here: no message, as in Celery
