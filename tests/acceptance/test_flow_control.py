"""Flow control with real worker processes: limits checked from recorded start/end times."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pgtasks import Client, TaskExpired
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.ledger import intervals, max_overlap
from tests.support.processes import stop, worker_process

FLOW_APP = "tests.acceptance.apps.flow_app"


def workers(
    url: str, ledger: Path, queue: str, count: int, concurrency: int = 4, output: Path | None = None
) -> list[subprocess.Popen[str]]:
    return [
        worker_process(
            url,
            ledger,
            f"{queue}-{i}",
            app=FLOW_APP,
            concurrency=concurrency,
            lease_seconds=2,
            extra_args=("-Q", queue),
            output=output,
        )
        for i in range(count)
    ]


def run_all(client: Client, ids: list[str], procs: list[subprocess.Popen[str]]) -> None:
    try:
        for task_id in ids:
            client.AsyncResult(task_id).get(timeout=90)
    finally:
        for proc in procs:
            stop(proc)


def test_global_concurrency_is_never_exceeded_across_three_workers(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    ids = [client.enqueue("flow.work", [f"t{i}", 0.15], queue="limited").id for i in range(12)]
    run_all(client, ids, workers(database_url, ledger, "limited", 3))
    spans = intervals(ledger)
    assert len(spans) == 12
    assert max_overlap(spans) == 2
    client.close()


def test_worker_concurrency_limits_each_process(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    ids = [client.enqueue("flow.work", [f"t{i}", 0.1], queue="one_per_worker").id for i in range(6)]
    run_all(client, ids, workers(database_url, ledger, "one_per_worker", 1, concurrency=4))
    assert max_overlap(intervals(ledger)) == 1
    client.close()


def test_rate_limit_holds_over_every_window(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    ids = [client.enqueue("flow.work", [f"t{i}", 0.0], queue="rated").id for i in range(9)]
    run_all(client, ids, workers(database_url, ledger, "rated", 2))
    started = sorted(r.started_at_epoch_ms or 0 for r in client.list_tasks(queue="rated"))
    assert len(started) == 9
    for i, first in enumerate(started):  # at most 3 starts in any 1-second window
        assert sum(1 for s in started[i:] if s - first < 1000) <= 3
    assert started[-1] - started[0] >= 2000  # 9 starts at 3/s need at least two full windows
    client.close()


def test_partitioned_queue_limits_each_tenant(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    ids = [
        client.enqueue("flow.work", [f"{tenant}{i}", 0.1], queue="tenants", partition_key=tenant).id
        for i in range(4)
        for tenant in ("a", "b")
    ]
    run_all(client, ids, workers(database_url, ledger, "tenants", 2))
    spans = intervals(ledger)
    for tenant in ("a", "b"):
        assert max_overlap([s for s in spans if s.label.startswith(tenant)]) == 1
    assert max_overlap(spans) == 2  # the tenants run side by side
    client.close()


def test_priority_orders_waiting_tasks(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    plan = [("p5-a", 5), ("p1", 1), ("p5-b", 5), ("p0", 0), ("p9", 9)]
    ids = [client.enqueue("flow.work", [label, 0.0], queue="prio", priority=p).id for label, p in plan]
    run_all(client, ids, workers(database_url, ledger, "prio", 1, concurrency=1))
    assert [s.label for s in intervals(ledger)] == ["p0", "p1", "p5-a", "p5-b", "p9"]
    client.close()


def test_delay_survives_a_worker_restart(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    log = ledger.with_name("worker.log")
    first = workers(database_url, ledger, "delayed", 1, output=log)[0]
    # Sent once the worker runs (a start slower than the countdown on a busy machine would
    # let the first worker run it): the countdown must only outlast the stop.
    wait_for(lambda: "ready." in log.read_text(), what="the worker to start")
    handle = client.enqueue("flow.work", ["later", 0.0], queue="delayed", countdown=6)
    assert handle.status == "DELAYED"
    out = stop(first)
    assert first.returncode == 0, out
    assert ledger.read_text() == ""
    second = workers(database_url, ledger, "delayed", 1)
    run_all(client, [handle.id], second)
    record = client.engine.get_task(handle.id)
    assert record is not None and record.started_at_epoch_ms is not None
    assert record.started_at_epoch_ms - record.created_at >= 6000
    client.close()


def test_expired_tasks_never_run(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    doomed = client.enqueue("flow.work", ["doomed", 0.0], queue="expiring", expires=0.2)
    fine = client.enqueue("flow.work", ["fine", 0.0], queue="expiring", expires=3600)
    wait_for(
        lambda: client.engine.admin.now_ms() > (client.engine.get_task(doomed.id).expires_at_epoch_ms or 0),
        what="the expiry to pass",
    )
    run_all(client, [fine.id], workers(database_url, ledger, "expiring", 1))
    with pytest.raises(TaskExpired):
        doomed.get(timeout=30)
    assert [s.label for s in intervals(ledger)] == ["fine"]
    client.close()


def test_queue_settings_changed_at_runtime_reach_running_workers(database_url: str, ledger: Path) -> None:
    client = Client(database_url)

    def queue_set(*args: str) -> None:
        done = run_pgtasks("queue", "set", "live", *args, url=database_url)
        assert done.returncode == 0, done.stderr

    queue_set("--concurrency", "1")
    log = ledger.with_name("worker.log")
    procs = workers(database_url, ledger, "live", 1, concurrency=4, output=log)
    first = [client.enqueue("flow.work", [f"one{i}", 0.1], queue="live").id for i in range(3)]
    for task_id in first:
        client.AsyncResult(task_id).get(timeout=60)
    queue_set("--concurrency", "3")
    wait_for(lambda: "live(concurrency=3" in log.read_text(), what="the worker to pick up the new setting")
    second = [client.enqueue("flow.work", [f"three{i}", 0.5], queue="live").id for i in range(3)]
    run_all(client, second, procs)
    spans = intervals(ledger)
    assert max_overlap([s for s in spans if s.label.startswith("one")]) == 1
    assert max_overlap([s for s in spans if s.label.startswith("three")]) == 3
    client.close()
