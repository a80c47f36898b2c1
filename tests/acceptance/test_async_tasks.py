"""``async def`` tasks and steps (issue 15, first part): run by real workers on the threads and
prefork pools, each task on an event loop of its own; a completed async step never runs again
after a kill -9; a revoke stops an async task at its next step; failures are recorded."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pgtasks import App, Client, ConfigurationError
from pgtasks.compat import Celery, shared_task
from tests.support.inprocess import running_worker, wait_for
from tests.support.processes import effects, stop, worker_process

APP = "tests.acceptance.apps.async_app"


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_async_tasks_and_steps_run(database_url: str, ledger: Path, pool: str) -> None:
    client = Client(database_url)
    worker = worker_process(database_url, ledger, "w-aio", app=APP, pool=pool)
    try:
        assert client.enqueue("aio.pipeline", [4]).get(timeout=60) == (4 + 1) * 2 - 3
        assert client.enqueue("aio.gather", [20]).get(timeout=60) == list(range(20))
        with pytest.raises(LookupError, match="not found upstream"):
            client.enqueue("aio.fails").get(timeout=60)
    finally:
        output = stop(worker)
    assert worker.returncode == 0, output
    client.close()


def test_a_completed_async_step_never_runs_again_after_kill_9(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("aio.pipeline", [10])
    crashing = worker_process(
        database_url, ledger, "w1", app=APP, crashpoint="after_checkpoint_commit:function_id=2"
    )
    assert crashing.wait(timeout=60) == -signal.SIGKILL
    rescuer = worker_process(database_url, ledger, "w2", app=APP, lease_seconds=1)
    try:
        assert handle.get(timeout=60) == (10 + 1) * 2 - 3
    finally:
        stop(rescuer)
    seen = effects(ledger)
    assert [seen[(handle.id, label)] for label in ("fetch", "score", "sync")] == [1, 1, 1]
    client.close()


def test_a_revoked_async_task_stops_at_its_next_step(database_url: str, ledger: Path, tmp_path: Path) -> None:
    client = Client(database_url)
    log = tmp_path / "worker.log"
    worker = worker_process(database_url, ledger, "w-revoke", app=APP, output=log)
    try:
        handle = client.enqueue("aio.waits")
        wait_for(lambda: effects(ledger)[(handle.id, "fetch")] >= 2, timeout=60, what="the task to run")
        assert client.cancel_task(handle.id)
        ran = effects(ledger)[(handle.id, "fetch")]
        wait_for(lambda: f"aio.waits[{handle.id}] abandoned" in log.read_text(), timeout=30, what="the stop")
        stopped_at = effects(ledger)[(handle.id, "fetch")]
        assert stopped_at <= ran + 1  # at most the step already running when the cancel came
        record = client.engine.get_task(handle.id)
        assert record is not None and record.status.value == "CANCELLED"
    finally:
        stop(worker)
    assert effects(ledger)[(handle.id, "fetch")] == stopped_at
    client.close()


async def _stream() -> AsyncIterator[int]:
    yield 1


def test_async_generators_are_refused_and_celery_async_tasks_run(sqlite_url: str) -> None:
    app = App("aio-gen", database_url=sqlite_url)
    with pytest.raises(ConfigurationError, match="is an async generator"):
        app.task(_stream)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="is an async generator"):
        shared_task(_stream)
    app.close()

    celery = Celery("aio-celery", broker=sqlite_url)

    @celery.task(name="c.aio.add", bind=True)
    async def add(self: object, x: int, y: int) -> int:
        return x + y

    assert add.apply((1, 2)).get() == 3  # eagerly, here
    with running_worker(celery, queues=("celery",)):
        assert add.delay(20, 22).get(timeout=30) == 42
    celery.close()
