"""The Extensions and Bootsteps guide: a project whose app adds a worker step and a consumer
step building kombu consumers (``from kombu import Consumer, Exchange, Queue, binding``). Its
worker starts, says the steps are not run, and runs the tasks; pgtasks' kombu had no
``Consumer`` nor ``binding``, so the app module did not import and the worker exited with
status 2. A Consumer cannot be built: there is no broker to consume from."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.compat.celery import Celery
from pgtasks.compat.kombu import Consumer, Exchange, binding
from tests.support.cli import cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop


def test_a_worker_of_an_app_with_custom_steps_starts_and_runs_its_tasks(pg_url: str, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    app = "tests.compat.apps.extensions_app"
    worker = spawn_pgtasks(
        "worker", "-A", app, "-n", "steps@test", "-P", "solo", env=cli_env(pg_url), output=log
    )
    client = Celery("steps_client", broker=pg_url, set_as_current=False)
    try:
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, "the worker to start")
        assert worker.poll() is None, log.read_text()
        assert client.send_task("extensions_app.add", (2, 3)).get(timeout=60) == 5
        assert (
            "pgtasks' worker has no bootsteps, so these added to app.steps are not run: "
            "consumer:CustomConsumerStep, worker:InfoStep"
        ) in log.read_text()
    finally:
        client.close()
        stop(worker)


def test_kombu_names_of_the_guide() -> None:
    bound = binding(Exchange("media", type="topic"), routing_key="media.#")
    assert repr(bound) == "<binding: media->media.#>" and bound.arguments is None
    with pytest.raises(NotImplementedError, match="pgtasks has no message broker to consume from"):
        Consumer(None, queues=[])
