"""The asyncio pool (``-P asyncio``, issue 15): real worker subprocesses run many async tasks at
once on one event loop, async steps survive kill -9 and revokes stop tasks, time limits cancel
coroutines, sync tasks run on its threads, and one app is served by an asyncio worker and a
prefork worker side by side."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pgtasks import Client, SoftTimeLimitExceeded, TimeLimitExceeded
from tests.support.inprocess import wait_for
from tests.support.processes import effects, stop, worker_process

APP = "tests.acceptance.apps.async_app"


def test_a_hundred_tasks_run_at_once_on_one_loop_with_sync_ones_beside(
    database_url: str, ledger: Path
) -> None:
    client = Client(database_url)
    worker = worker_process(database_url, ledger, "w-loop", app=APP, pool="asyncio", concurrency=100)
    try:
        waiting = [client.enqueue("aio.barrier", [100]) for _ in range(100)]
        assert [h.get(timeout=60) for h in waiting] == [100] * 100
        assert client.enqueue("aio.sync_add", [2, 3]).get(timeout=60) == 5
        assert client.enqueue("aio.pipeline", [4]).get(timeout=60) == (4 + 1) * 2 - 3
        with pytest.raises(LookupError, match="not found upstream"):
            client.enqueue("aio.fails").get(timeout=60)
    finally:
        output = stop(worker)
    assert worker.returncode == 0, output
    assert "pool: asyncio" in output or "asyncio" in output
    client.close()


def test_a_completed_async_step_never_runs_again_after_kill_9(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("aio.pipeline", [10])
    crashing = worker_process(
        database_url,
        ledger,
        "w1",
        app=APP,
        pool="asyncio",
        crashpoint="after_checkpoint_commit:function_id=2",
    )
    assert crashing.wait(timeout=60) == -signal.SIGKILL
    rescuer = worker_process(database_url, ledger, "w2", app=APP, pool="asyncio", lease_seconds=1)
    try:
        assert handle.get(timeout=60) == (10 + 1) * 2 - 3
    finally:
        stop(rescuer)
    seen = effects(ledger)
    assert [seen[(handle.id, label)] for label in ("fetch", "score", "sync")] == [1, 1, 1]
    client.close()


@pytest.mark.parametrize(
    ("point", "score_runs"),
    [("after_step_body_before_checkpoint", 2), ("after_checkpoint_commit", 1)],
)
def test_a_lost_connection_at_an_async_checkpoint_releases_the_task_and_spares_the_worker(
    database_url: str, ledger: Path, point: str, score_runs: int
) -> None:
    """Every write of the second step's checkpoint fails like a lost connection on the first
    attempt (before the commit, or as its lost reply): the coroutine retries it for a lease,
    gives the task back, and the worker runs it again from its last checkpoint."""
    client = Client(database_url)
    handle = client.enqueue("aio.pipeline", [4])
    worker = worker_process(
        database_url,
        ledger,
        "w1",
        app=APP,
        pool="asyncio",
        crashpoint=f"{point}:function_id=2,attempt=1",
        extra_env={"PGTASKS_CRASHPOINT_MODE": "raise"},
    )
    try:
        assert handle.get(timeout=60) == (4 + 1) * 2 - 3
        assert worker.poll() is None  # the worker survived
    finally:
        out = stop(worker)
    assert "checkpoint failed, retrying" in out and "releasing it" in out, out[-3000:]
    seen = effects(ledger)
    # A checkpoint that committed is recognised on the retry and replayed on the next run.
    assert [seen[(handle.id, label)] for label in ("fetch", "score", "sync")] == [1, score_runs, 1]
    record = client.engine.get_task(handle.id)
    assert record is not None and record.recovery_attempts == 2
    client.close()


def test_revoke_and_terminate_stop_async_tasks(database_url: str, ledger: Path, tmp_path: Path) -> None:
    client = Client(database_url)
    log = tmp_path / "worker.log"
    worker = worker_process(database_url, ledger, "w-revoke", app=APP, pool="asyncio", output=log)
    try:
        stepping = client.enqueue("aio.waits")
        wait_for(lambda: effects(ledger)[(stepping.id, "fetch")] >= 2, timeout=60, what="the task to run")
        assert client.cancel_task(stepping.id)
        wait_for(lambda: f"aio.waits[{stepping.id}] " in log.read_text(), timeout=30, what="its stop")
        # terminate=True cancels a coroutine that has no step to stop at
        sleeping = client.enqueue("aio.sleeps", [600])
        wait_for(lambda: f"aio.sleeps[{sleeping.id}] received" in log.read_text(), timeout=30, what="a start")
        assert client.cancel_task(sleeping.id)  # what revoke(terminate=True) does
        assert client.engine.admin.request_terminate(sleeping.id, "SIGTERM")
        wait_for(
            lambda: f"aio.sleeps[{sleeping.id}] terminated" in log.read_text(), timeout=30, what="terminate"
        )
        assert client.enqueue("aio.sync_add", [1, 1]).get(timeout=60) == 2  # the worker goes on
        for handle in (stepping, sleeping):
            record = client.engine.get_task(handle.id)
            assert record is not None and record.status.value == "CANCELLED"
    finally:
        stop(worker)
    assert worker.returncode == 0
    client.close()


def test_time_limits_cancel_the_coroutine(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    worker = worker_process(
        database_url,
        ledger,
        "w-limits",
        app=APP,
        pool="asyncio",
        extra_args=("--soft-time-limit", "0.5", "--time-limit", "2"),
    )
    try:
        with pytest.raises(SoftTimeLimitExceeded, match=r"soft time limit of 0\.5s"):
            client.enqueue("aio.sleeps", [600]).get(timeout=60)
        cleaned = client.enqueue("aio.cleans_up", [600])
        assert cleaned.get(timeout=60) == "cleaned up"  # caught the cancellation and returned
        assert effects(ledger)[(cleaned.id, "cleaned")] == 1
        assert client.enqueue("aio.sleeps", [0.01]).get(timeout=60) == "slept"
    finally:
        output = stop(worker)
    assert worker.returncode == 0, output
    hard = worker_process(
        database_url, ledger, "w-hard", app=APP, pool="asyncio", extra_args=("--time-limit", "0.5")
    )
    try:
        with pytest.raises(TimeLimitExceeded, match=r"time limit of 0\.5s"):
            client.enqueue("aio.sleeps", [600]).get(timeout=60)
        assert client.enqueue("aio.sleeps", [0.01]).get(timeout=60) == "slept"
    finally:
        stop(hard)
    client.close()


def test_one_app_served_by_an_asyncio_worker_and_a_prefork_worker(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    io = worker_process(database_url, ledger, "w-io", app=APP, pool="asyncio", concurrency=50)
    cpu = worker_process(database_url, ledger, "w-cpu", app=APP, pool="prefork", extra_args=("-Q", "cpu"))
    try:
        io_handles = [client.enqueue("aio.barrier", [20]) for _ in range(20)]
        cpu_handles = [client.enqueue("aio.on_other_queue", [i], queue="cpu") for i in range(5)]
        assert [h.get(timeout=60) for h in io_handles] == [20] * 20
        assert [h.get(timeout=60) for h in cpu_handles] == [0, 10, 20, 30, 40]
        ran_on = {client.engine.get_task(h.id).executor_id for h in cpu_handles}  # type: ignore[union-attr]
        assert ran_on == {"w-cpu"}
    finally:
        stop(io)
        stop(cpu)
    client.close()
