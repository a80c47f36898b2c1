"""Crash recovery with real worker processes killed by SIGKILL at named crash points."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pgtasks import Client, MaxRecoveryAttemptsExceeded
from tests.support.inprocess import wait_for
from tests.support.pgserver import PostgresServer
from tests.support.processes import effects, stop, worker_process


def test_killed_inside_step_two_the_same_executor_resumes(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.three_steps", [5])
    crashing = worker_process(
        database_url, ledger, "w1", crashpoint="after_step_body_before_checkpoint:function_id=2"
    )
    assert crashing.wait(timeout=60) == -signal.SIGKILL
    record = client.engine.get_task(handle.id)
    assert record is not None and record.status.value == "PENDING" and record.executor_id == "w1"
    assert [s.function_id for s in client.engine.admin.steps(handle.id)] == [1]
    # Restarted with the same executor id, the worker recovers its own task at start-up.
    restarted = worker_process(database_url, ledger, "w1", lease_seconds=60)
    try:
        assert handle.get(timeout=60) == (5 + 1) * 2 - 3
    finally:
        stop(restarted)
    seen = effects(ledger)
    assert seen[(handle.id, "step1")] == 1
    assert seen[(handle.id, "step2")] == 2  # ran, crashed before its checkpoint, ran again
    assert seen[(handle.id, "step3")] == 1
    steps = client.engine.admin.steps(handle.id)
    assert [s.function_id for s in steps] == [1, 2, 3]
    final = client.engine.get_task(handle.id)
    assert final is not None and final.recovery_attempts == 2
    client.close()


def test_another_executor_takes_over_after_the_lease_expires(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.three_steps", [10])
    crashing = worker_process(database_url, ledger, "w1", crashpoint="after_checkpoint_commit:function_id=2")
    assert crashing.wait(timeout=60) == -signal.SIGKILL
    rescuer = worker_process(database_url, ledger, "w2", lease_seconds=1)
    try:
        assert handle.get(timeout=60) == (10 + 1) * 2 - 3
    finally:
        out = stop(rescuer)
    assert "recovered 1 tasks of executors whose lease expired" in out
    seen = effects(ledger)
    # Step 2's checkpoint was committed before the crash: no step ran twice.
    assert [seen[(handle.id, f"step{i}")] for i in (1, 2, 3)] == [1, 1, 1]
    steps = client.engine.admin.steps(handle.id)
    assert [(s.function_id, s.executor_id) for s in steps] == [(1, "w1"), (2, "w1"), (3, "w2")]
    client.close()


def test_a_task_that_kills_its_worker_is_dead_lettered(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.poison", max_recovery_attempts=2)
    other = client.enqueue("durable.three_steps", [1])

    def status() -> str:
        record = client.engine.get_task(handle.id)
        assert record is not None
        return record.status.value

    worker = None
    for _ in range(6):  # each start runs the poison task once, and it kills the worker
        worker = worker_process(database_url, ledger, "w1", concurrency=1, lease_seconds=60)
        wait_for(
            lambda w=worker: w.poll() is not None or status() == "MAX_RECOVERY_ATTEMPTS_EXCEEDED",
            timeout=60,
            what="the worker to die or the task to be dead-lettered",
        )
        if worker.poll() is None:
            break
        assert worker.returncode == -signal.SIGKILL
    assert worker is not None and worker.poll() is None, "the poison task was never dead-lettered"
    try:
        record = client.engine.get_task(handle.id)
        assert record is not None and record.status.value == "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
        assert record.recovery_attempts == 3  # the first run and two recoveries
        assert effects(ledger)[(handle.id, "poison")] == 3
        with pytest.raises(MaxRecoveryAttemptsExceeded, match="max_recovery_attempts=2"):
            handle.get(timeout=1)
        # The worker that dead-lettered it goes on serving other work.
        assert other.get(timeout=60) == 1
    finally:
        stop(worker)
    client.close()


def test_two_executors_recovering_at_once_finish_the_task_once(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.slow", [6])
    crashing = worker_process(database_url, ledger, "w0", crashpoint="after_checkpoint_commit:function_id=3")
    assert crashing.wait(timeout=60) == -signal.SIGKILL
    rescuers = [worker_process(database_url, ledger, name, lease_seconds=1) for name in ("w1", "w2")]
    try:
        assert handle.get(timeout=60) == sum(range(6))
    finally:
        for proc in rescuers:
            stop(proc)
    steps = client.engine.admin.steps(handle.id)
    assert [s.function_id for s in steps] == [1, 2, 3, 4, 5, 6]
    seen = effects(ledger)
    assert all(seen[(handle.id, f"slow{i}")] == 1 for i in range(6)), seen
    finishers = {s.executor_id for s in steps[3:]}
    assert len(finishers) == 1 and finishers <= {"w1", "w2"}
    client.close()


def test_warm_shutdown_finishes_running_tasks(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.slow", [5])
    worker = worker_process(database_url, ledger, "w1", lease_seconds=60)
    wait_for(lambda: effects(ledger)[(handle.id, "slow0")] == 1, what="the task to start")
    out = stop(worker, signal.SIGTERM)
    assert worker.returncode == 0, out
    assert "warm shutdown" in out
    record = client.engine.get_task(handle.id)
    assert record is not None and record.status.value == "SUCCESS"
    assert client.engine.admin.executors() == []
    client.close()


def test_database_errors_at_a_checkpoint_release_the_task_without_killing_the_worker(
    database_url: str, ledger: Path
) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.three_steps", [4])
    # On the first attempt every write of step 2's checkpoint fails like a lost connection.
    worker = worker_process(
        database_url,
        ledger,
        "w1",
        lease_seconds=1,
        crashpoint="after_step_body_before_checkpoint:function_id=2,attempt=1",
        extra_env={"PGTASKS_CRASHPOINT_MODE": "raise"},
    )
    try:
        assert handle.get(timeout=60) == (4 + 1) * 2 - 3
        assert worker.poll() is None  # the worker survived
    finally:
        out = stop(worker)
    assert "releasing it" in out
    seen = effects(ledger)
    assert [seen[(handle.id, f"step{i}")] for i in (1, 2, 3)] == [1, 2, 1]
    record = client.engine.get_task(handle.id)
    assert record is not None and record.recovery_attempts == 2
    client.close()


def test_sigterm_stops_a_worker_whose_database_is_gone(tmp_path: Path) -> None:
    server = PostgresServer().start()
    try:
        # A grace period and a reconnect deadline (60 s by default) longer than the test waits:
        # with nothing running, neither the claim in flight nor any other wait for the lost
        # server may hold the stop for them.
        worker = worker_process(
            server.url, tmp_path / "ledger", "w1", lease_seconds=60, extra_args=("--shutdown-grace", "600")
        )
        client = Client(server.url)
        assert client.enqueue("durable.three_steps", [3]).get(timeout=60) == 5
        client.close()
        server.stop("immediate")
        out = stop(worker, signal.SIGTERM, timeout=60)
        assert worker.returncode == 0, out
        assert "could not remove executor w1" in out  # tried, and given up on
        assert "worker stopped" in out
    finally:
        server.destroy()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_workers_survive_a_postgres_restart_and_finish_every_task(tmp_path: Path, mode: str) -> None:
    server = PostgresServer().start()
    ledger = tmp_path / "effects.log"
    try:
        client = Client(server.url)
        handles = [client.enqueue("durable.slow", [2]) for _ in range(12)]
        workers = [
            worker_process(server.url, ledger, f"w{i}", lease_seconds=3, concurrency=3) for i in range(2)
        ]
        wait_for(lambda: len(effects(ledger)) >= 4, what="tasks to be running")
        server.stop(mode)
        server.launch()
        try:
            assert [h.get(timeout=120) for h in handles] == [1] * 12
            assert all(w.poll() is None for w in workers)  # no worker died with the database
        finally:
            for worker in workers:
                stop(worker)
        seen = effects(ledger)
        for handle in handles:
            assert 1 <= seen[(handle.id, "slow0")] <= 2 and 1 <= seen[(handle.id, "slow1")] <= 2
            assert [s.function_id for s in client.engine.admin.steps(handle.id)] == [1, 2]
        client.close()
    finally:
        server.destroy()
