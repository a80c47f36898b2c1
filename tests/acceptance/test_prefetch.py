"""The prefork pool's prefetch (Celery's worker_prefetch_multiplier): a worker claims
``concurrency x multiplier`` tasks where its queues have no limits (without a multiplier, more
while its tasks run short), runs ``concurrency`` of them
at once, gives the waiting ones back at a warm shutdown, and never starts one that was revoked
while it waited."""

from __future__ import annotations

import signal
from pathlib import Path

from pgtasks import Client
from pgtasks.engine.options import SendOptions
from pgtasks.sending import send_many
from pgtasks.task_info import TaskInfo
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import effects, largest_claim_of_drain, stop, worker_process


def held_by(client: Client, executor: str) -> list[TaskInfo]:
    return [t for t in client.list_tasks(status=["PENDING"], limit=100) if t.executor_id == executor]


def test_a_worker_claims_ahead_but_runs_only_its_concurrency(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    handles = [client.enqueue("durable.slow", [5]) for _ in range(4)]  # a second each
    worker = worker_process(
        database_url, ledger, "pf", pool="prefork", concurrency=1, extra_args=("--prefetch-multiplier", "3")
    )

    def started() -> set[str]:
        return {task_id for task_id, label in effects(ledger) if label == "slow0"}

    try:
        wait_for(lambda: len(started()) == 1, what="the first task to start")
        wait_for(
            lambda: len(held_by(client, "pf")) == 3, what="three tasks claimed by a worker of one process"
        )
        assert len(started()) == 1  # the two prefetched ones have not started
        assert [h.get(timeout=60) for h in handles] == [10] * 4
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    seen = effects(ledger)
    assert all(seen[(h.id, f"slow{i}")] == 1 for h in handles for i in range(5))
    client.close()


def largest_claim_while_draining(database_url: str, ledger: Path, extra_args: tuple[str, ...]) -> int:
    """The most tasks one claim of a prefork worker of one process took (tasks of one claim
    share its claim token) while it drained a backlog of 3,000 short tasks."""
    client = Client(database_url)
    send_many(client.engine, "durable.pid", [()] * 3000, None, SendOptions(queue="default"))
    log = ledger.parent / "worker.log"  # a line per task: more than a pipe holds unread
    worker = worker_process(
        database_url, ledger, "pf", pool="prefork", concurrency=1, extra_args=extra_args, output=log
    )
    largest = largest_claim_of_drain(client, worker, log, 3000)
    client.close()
    return largest


def test_without_a_multiplier_short_tasks_are_held_beyond_four_per_process(
    database_url: str, ledger: Path
) -> None:
    """The default holds what the process finishes in a quarter of a second while its tasks run
    short, so that it is not idle between claims; a multiplier given is a bound."""
    assert largest_claim_while_draining(database_url, ledger, ()) > 4


def test_a_multiplier_given_bounds_the_tasks_held(database_url: str, ledger: Path) -> None:
    assert largest_claim_while_draining(database_url, ledger, ("--prefetch-multiplier", "4")) <= 4


def test_the_hard_time_limit_counts_from_the_start_not_the_claim(database_url: str, ledger: Path) -> None:
    # Each task runs 0.6 s under a 1.5 s limit; the last waits about 1.2 s for the child first.
    client = Client(database_url)
    handles = [client.enqueue("durable.sleepy", [0.6]) for _ in range(3)]
    worker = worker_process(
        database_url, ledger, "pf", pool="prefork", concurrency=1, extra_args=("--time-limit", "1.5")
    )
    try:
        assert [h.get(timeout=60) for h in handles] == ["woke up"] * 3
    finally:
        out = stop(worker)
    assert "TimeLimitExceeded" not in out
    client.close()


def test_warm_shutdown_gives_prefetched_tasks_back_unstarted(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    first = client.enqueue("durable.slow", [4])
    rest = [client.enqueue("durable.slow", [1]) for _ in range(3)]
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1)
    try:
        wait_for(lambda: effects(ledger)[(first.id, "slow0")] == 1, what="the first task to start")
        wait_for(lambda: len(held_by(client, "pf")) == 4, what="the other three prefetched")
    finally:
        out = stop(worker, signal.SIGTERM)
    assert worker.returncode == 0, out
    assert client.AsyncResult(first.id).status == "SUCCESS"  # the running one finished
    for handle in rest:
        task = client.engine.get_task(handle.id)
        assert task is not None and task.status.value == "ENQUEUED", task
        assert task.executor_id is None and task.recovery_attempts == 0  # the claim is taken back
        assert effects(ledger)[(handle.id, "slow0")] == 0
    other = worker_process(database_url, ledger, "pf2", pool="prefork", concurrency=1)
    try:
        assert [h.get(timeout=60) for h in rest] == [0, 0, 0]
    finally:
        stop(other)
    client.close()


def test_a_task_revoked_while_prefetched_never_starts(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    first = client.enqueue("durable.slow", [5])  # about a second in the only process
    waiting = client.enqueue("durable.slow", [1])
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1)
    try:
        wait_for(lambda: effects(ledger)[(first.id, "slow0")] == 1, what="the first task to start")
        wait_for(lambda: len(held_by(client, "pf")) == 2, what="the second prefetched")
        assert client.cancel_task(waiting.id)
        assert first.get(timeout=60) == sum(range(5))
    finally:
        out = stop(worker)
    assert effects(ledger)[(waiting.id, "slow0")] == 0  # it never started
    assert f"Task durable.slow[{waiting.id}] abandoned" in out
    task = client.engine.get_task(waiting.id)
    assert task is not None and task.status.value == "CANCELLED"
    assert worker.returncode == 0, out
    client.close()


def test_a_limited_queue_is_claimed_exactly_without_prefetch(database_url: str, ledger: Path) -> None:
    done = run_pgtasks("queue", "set", "default", "--concurrency", "5", url=database_url)
    assert done.returncode == 0, done.stderr
    client = Client(database_url)
    first = client.enqueue("durable.slow", [5])
    others = [client.enqueue("durable.slow", [1]) for _ in range(3)]
    worker = worker_process(database_url, ledger, "pf", pool="prefork", concurrency=1)
    try:
        wait_for(lambda: effects(ledger)[(first.id, "slow1")] == 1, what="the first task to run a while")
        assert [t.task_id for t in held_by(client, "pf")] == [first.id]  # one process, one claim
        assert [h.get(timeout=60) for h in others] == [0, 0, 0]
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    client.close()


def test_slow_tasks_held_beyond_four_per_process_go_back_for_another_worker(
    database_url: str, ledger: Path
) -> None:
    """Short tasks followed by slow ones: the default claims sized by the short ones take
    slow ones too; those held beyond 4 per process go back unstarted once they wait (their
    attempt taken back), and a second worker started then runs its share; each runs once."""
    client = Client(database_url)
    send_many(client.engine, "durable.pid", [()] * 2000, None, SendOptions(queue="default"))
    # 2 s each: pf-a alone would take 24 s, so the second worker, started after the first
    # give-back, finds some left however long its start takes on a loaded machine
    handles = [client.enqueue("durable.slow", [10]) for _ in range(12)]
    log = ledger.parent / "workers.log"  # a line per task: more than a pipe holds unread
    first = worker_process(database_url, ledger, "pf-a", pool="prefork", concurrency=1, output=log)
    second = None

    def given_back() -> bool:
        tasks = [client.engine.get_task(h.id) for h in handles]
        return any(t is not None and t.status.value == "ENQUEUED" and t.started_at_epoch_ms for t in tasks)

    try:
        wait_for(given_back, timeout=120, what="a slow task claimed by pf-a and given back")
        second = worker_process(database_url, ledger, "pf-b", pool="prefork", concurrency=1, output=log)
        assert [h.get(timeout=120) for h in handles] == [45] * 12
    finally:
        stop(first)
        if second is not None:
            stop(second)
    assert first.returncode == 0 and second is not None and second.returncode == 0, log.read_text()[-2000:]
    slow = [client.engine.get_task(h.id) for h in handles]
    assert all(t is not None and t.recovery_attempts == 1 for t in slow)  # given back: not counted
    assert sum(t is not None and t.executor_id == "pf-b" for t in slow) >= 2
    seen = effects(ledger)
    assert all(seen[(h.id, f"slow{i}")] == 1 for h in handles for i in range(10))  # each ran once
    client.close()
