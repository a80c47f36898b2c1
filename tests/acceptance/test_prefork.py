"""The prefork pool: child processes, hard and soft time limits, max-tasks-per-child, and a
child that dies mid-task."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from pgtasks import Client, MaxRecoveryAttemptsExceeded, TimeLimitExceeded
from tests.support.inprocess import wait_for
from tests.support.processes import effects, stop, worker_process


def test_children_run_tasks_and_are_replaced_after_max_tasks(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    worker = worker_process(
        database_url, ledger, "pf", pool="prefork", concurrency=1, extra_args=("--max-tasks-per-child", "2")
    )
    try:
        pids = [client.enqueue("durable.pid").get(timeout=60) for _ in range(6)]
        assert client.enqueue("durable.three_steps", [2]).get(timeout=60) == 3
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    assert "(prefork)" in out
    assert worker.pid not in pids
    assert [len(set(pids[i : i + 2])) for i in range(0, 6, 2)] == [1, 1, 1]
    assert len(set(pids)) == 3
    client.close()


def test_a_child_is_replaced_after_the_task_that_took_it_past_max_memory(
    database_url: str, ledger: Path
) -> None:
    # Celery's worker_max_memory_per_child: the task that crosses the limit completes in its
    # child, and the next task runs in a new one.
    client = Client(database_url)
    worker = worker_process(
        database_url,
        ledger,
        "pf",
        pool="prefork",
        concurrency=1,
        extra_args=("--max-memory-per-child", str(400 * 1024)),
    )
    try:
        before = [client.enqueue("durable.pid").get(timeout=60) for _ in range(3)]
        hog = client.enqueue("durable.hog", [512]).get(timeout=60)
        after = [client.enqueue("durable.pid").get(timeout=60) for _ in range(2)]
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    assert len(set(before)) == 1  # under the limit: one child
    assert hog == before[0]  # the task that crossed it ran to its end there
    assert len(set(after)) == 1 and after[0] != hog  # then a new child took over
    client.close()


def test_children_replaced_after_every_task_never_stall(database_url: str, ledger: Path) -> None:
    # Forking a replacement from the running worker once left children waiting forever on a
    # SQLite lock they had inherited (stuck in 5 of 5 runs of this test); the fork server
    # forks them from a process that never opened the database. 120 tasks (120 children) are
    # plenty: the stall came within the first few dozen; 300 cost the suite ~35 s a run.
    client = Client(database_url)
    log = ledger.with_name("worker.log")  # a file: a pipe nobody reads would fill and block
    worker = worker_process(
        database_url,
        ledger,
        "pf",
        pool="prefork",
        concurrency=2,
        extra_args=("--max-tasks-per-child", "1"),
        output=log,
    )
    try:
        handles = [client.enqueue("durable.three_steps", [i]) for i in range(120)]
        assert [h.get(timeout=60) for h in handles] == [(i + 1) * 2 - 3 for i in range(120)]
    finally:
        stop(worker)
    assert worker.returncode == 0, log.read_text()[-3000:]
    assert "no idle child" not in log.read_text()
    client.close()


def test_a_worker_whose_fork_server_died_exits_for_its_supervisor(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    log = ledger.with_name("worker.log")
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1, output=log)
    try:
        handle = client.enqueue("durable.slow", [3])
        wait_for(lambda: effects(ledger)[(handle.id, "slow0")] == 1, what="the task to start")
        [server] = _children(worker.pid)  # its one child: the fork server; the pool is below
        os.kill(server, signal.SIGKILL)  # the child running the task dies with it
        assert worker.wait(timeout=60) == 1  # non-zero: a supervisor restarts it
    finally:
        stop(worker)
    text = log.read_text()
    assert "cannot start child processes any more: the fork server is gone" in text
    assert "the prefork pool stopped unexpectedly; shutting down" in text
    assert f"the process running task {handle.id} died" in text  # given back, not lost
    restarted = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1)
    try:
        assert handle.get(timeout=60) == sum(range(3))
    finally:
        stop(restarted)
    client.close()


def _children(pid: int) -> list[int]:
    threads = Path(f"/proc/{pid}/task").iterdir()
    return [int(child) for thread in threads for child in (thread / "children").read_text().split()]


def test_hard_time_limit_kills_the_child_and_records_the_error(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    worker = worker_process(
        database_url, ledger, "pf", pool="prefork", concurrency=1, extra_args=("--time-limit", "1")
    )
    try:
        stuck = client.enqueue("durable.sleepy", [60])
        with pytest.raises(TimeLimitExceeded, match="time limit of 1s"):
            stuck.get(timeout=60)
        assert client.enqueue("durable.sleepy", [0]).get(timeout=60) == "woke up"  # a new child serves
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    client.close()


def test_soft_time_limit_raises_inside_the_task(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    worker = worker_process(
        database_url, ledger, "pf", pool="prefork", concurrency=2, extra_args=("--soft-time-limit", "0.5")
    )
    try:
        assert client.enqueue("durable.soft", [30]).get(timeout=60) == "cleaned up after the soft limit"
        assert client.enqueue("durable.soft", [0]).get(timeout=60) == "finished in time"
    finally:
        stop(worker)
    client.close()


def test_a_soft_time_limit_past_any_timer_never_falls(pg_url: str, ledger: Path) -> None:
    """1e300 s: setitimer's OverflowError ended the child before each run of the task, which was
    given back every time ("process exited with code 1") until it was dead-lettered."""
    client = Client(pg_url)
    worker = worker_process(
        pg_url, ledger, "pf", pool="prefork", concurrency=1, extra_args=("--soft-time-limit", "1e300")
    )
    try:
        assert client.enqueue("durable.soft", [0]).get(timeout=30) == "finished in time"
    finally:
        out = stop(worker)
    client.close()
    assert "died" not in out, out


def test_a_child_killed_inside_a_step_is_replaced_and_the_task_resumes(
    database_url: str, ledger: Path
) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.three_steps", [5])
    worker = worker_process(
        database_url,
        ledger,
        "pf",
        pool="prefork",
        concurrency=1,
        crashpoint="after_step_body_before_checkpoint:function_id=2,attempt=1",
    )
    try:
        assert handle.get(timeout=60) == (5 + 1) * 2 - 3
        assert worker.poll() is None  # only the child died
    finally:
        out = stop(worker)
    assert "died" in out
    seen = effects(ledger)
    assert [seen[(handle.id, f"step{i}")] for i in (1, 2, 3)] == [1, 2, 1]
    client.close()


def test_a_task_that_kills_its_child_every_time_is_dead_lettered(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    poison = client.enqueue("durable.poison", max_recovery_attempts=2)
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1)
    try:
        with pytest.raises(MaxRecoveryAttemptsExceeded):
            poison.get(timeout=60)
        assert client.enqueue("durable.three_steps", [1]).get(timeout=60) == 1
    finally:
        stop(worker, signal.SIGTERM)
    assert effects(ledger)[(poison.id, "poison")] == 3
    client.close()


def test_cold_shutdown_loses_nothing_and_leaves_no_orphan(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.slow", [4])
    log = ledger.with_name("worker.log")
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1, output=log)
    wait_for(lambda: effects(ledger)[(handle.id, "slow0")] == 1, what="the task to start")
    worker.send_signal(signal.SIGTERM)
    wait_for(lambda: "warm shutdown" in log.read_text(), what="the warm shutdown to begin")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 1
    # The task's own line ("the worker shut down cold") comes only if the pool reaches it
    # before the process exits: a cold shutdown does not wait for it.
    assert "cold shutdown" in log.read_text()
    rescuer = worker_process(database_url, ledger, "rescuer", lease_seconds=1)
    try:
        assert handle.get(timeout=60) == sum(range(4))
    finally:
        stop(rescuer)
    seen = effects(ledger)
    assert seen[(handle.id, "slow0")] <= 2
    # The killed worker's child did not go on: every later step ran exactly once.
    assert [seen[(handle.id, f"slow{i}")] for i in (1, 2, 3)] == [1, 1, 1]
    client.close()


def test_warm_shutdown_lets_the_child_finish(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handle = client.enqueue("durable.slow", [3])
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1)
    wait_for(lambda: effects(ledger)[(handle.id, "slow0")] == 1, what="the task to start")
    out = stop(worker, signal.SIGTERM)
    assert worker.returncode == 0, out
    record = client.engine.get_task(handle.id)
    assert record is not None and record.status.value == "SUCCESS"
    client.close()
