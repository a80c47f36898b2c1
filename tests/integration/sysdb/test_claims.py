"""Conformance of the system database, on PostgreSQL and SQLite: claims and their flow control
(priority, versions, concurrency, rate limits, partitions)."""

from __future__ import annotations

import psycopg

from pgtasks.sysdb import Status, SystemDatabase, open_system_database
from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.records import ClaimParams, CompleteParams, Outcome, QueueClaim
from tests.integration.sysdb.support import claim, new
from tests.support.inprocess import wait_for


def test_claim_honours_limit_priority_fifo_and_queues(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue(
        [
            new("low1", priority=5),
            new("high", priority=1),
            new("low2", priority=5),
            new("elsewhere", queue="other"),
        ]
    )
    assert claim(sysdb, limit=2) == ["high", "low1"]
    assert claim(sysdb, limit=5) == ["low2"]
    assert claim(sysdb, limit=5) == []
    got = sysdb.task_get("high")
    assert got is not None and got.status is Status.PENDING and got.executor_id == "w1"
    assert got.recovery_attempts == 1 and got.application_version == "v1"


def test_claim_respects_pinned_application_version(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("pinned", application_version="v2"), new("free")])
    assert claim(sysdb, version="v1") == ["free"]
    assert claim(sysdb, version="v2") == ["pinned"]


def test_global_concurrency_counts_running_tasks_of_every_worker(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new(f"t{i}") for i in range(6)])
    limited = QueueClaim("default", concurrency=2)
    assert len(sysdb.tasks_claim(ClaimParams("w1", "v1", (limited,), 5))) == 2
    assert sysdb.tasks_claim(ClaimParams("w2", "v1", (limited,), 5)) == []
    sysdb.tasks_complete(CompleteParams("w1", (Outcome("t0", Status.SUCCESS, "1"),)))
    assert [t.task_id for t in sysdb.tasks_claim(ClaimParams("w2", "v1", (limited,), 5))] == ["t2"]


def test_rate_limit_counts_starts_within_the_period(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new(f"t{i}") for i in range(5)])
    limited = QueueClaim("default", rate_limit_max=3, rate_limit_period_ms=3_600_000)
    assert len(sysdb.tasks_claim(ClaimParams("w1", "v1", (limited,), 2))) == 2
    assert len(sysdb.tasks_claim(ClaimParams("w2", "v1", (limited,), 5))) == 1
    assert sysdb.tasks_claim(ClaimParams("w3", "v1", (limited,), 5)) == []
    # Finished tasks still count: the limit is on starts, not on running tasks.
    sysdb.tasks_complete(CompleteParams("w1", (Outcome("t0", Status.SUCCESS, "1"),)))
    assert sysdb.tasks_claim(ClaimParams("w3", "v1", (limited,), 5)) == []
    tiny = QueueClaim("default", rate_limit_max=3, rate_limit_period_ms=1)
    wait_for(
        lambda: len(sysdb.tasks_claim(ClaimParams("w3", "v1", (tiny,), 5))) > 0, what="the window to pass"
    )


def test_partitioned_concurrency_applies_per_key(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue(
        [new(f"a{i}", partition_key="tenant-a") for i in range(4)]
        + [new(f"b{i}", partition_key="tenant-b") for i in range(4)]
    )
    per_key = QueueClaim("default", concurrency=1, partitioned=True)
    first = [t.task_id for t in sysdb.tasks_claim(ClaimParams("w1", "v1", (per_key,), 10))]
    assert sorted(first) == ["a0", "b0"]
    assert sysdb.tasks_claim(ClaimParams("w2", "v1", (per_key,), 10)) == []
    sysdb.tasks_complete(CompleteParams("w1", (Outcome("a0", Status.SUCCESS, "1"),)))
    assert [t.task_id for t in sysdb.tasks_claim(ClaimParams("w2", "v1", (per_key,), 10))] == ["a1"]


def test_partitioned_claim_takes_keyless_tasks_as_one_group_in_priority_order(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue(
        [new(f"n{i}") for i in range(3)]  # no key: one group of their own
        + [new(f"a{i}", partition_key="tenant-a", priority=1) for i in range(3)]
        + [new("b0", partition_key="tenant-b", priority=0), new("c0", partition_key="tenant-c", priority=2)]
    )
    per_key = QueueClaim("default", concurrency=2, partitioned=True)
    claimed = sorted(t.task_id for t in sysdb.tasks_claim(ClaimParams("w1", "v1", (per_key,), 5)))
    assert claimed == ["a0", "a1", "b0", "n0", "n1"]  # c0 (priority 2) waits for the limit of 5
    rest = [t.task_id for t in sysdb.tasks_claim(ClaimParams("w2", "v1", (per_key,), 10))]
    assert rest == ["c0"]  # n2 and a2 wait: their groups have 2 running
    unlimited = QueueClaim("default", partitioned=True)
    last = sysdb.tasks_claim(ClaimParams("w3", "v1", (unlimited,), 10))
    assert sorted(t.task_id for t in last) == ["a2", "n2"]


def test_per_queue_limits_cap_what_one_claim_takes(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new(f"d{i}") for i in range(3)] + [new(f"m{i}", queue="mail") for i in range(3)])
    claimed = sysdb.tasks_claim(ClaimParams("w1", "v1", (QueueClaim("default", limit=1), "mail"), 10))
    assert sorted(t.task_id for t in claimed) == ["d0", "m0", "m1", "m2"]


def test_a_free_claim_commits_without_waiting_for_its_flush_and_a_limited_one_waits(pg_url: str) -> None:
    """A claim of a queue without limits runs with synchronous_commit off for its own
    transaction (the task's first durable write flushes it); a claim under limits does not."""
    db = open_system_database(pg_url)
    try:
        db.migrate()
        db.tasks_enqueue([new("free1"), new("free2")])
        assert isinstance(db, PostgresSystemDatabase)
        args = {"version": "v1", "executor_id": "w1", "claim_token": "t1"}
        with psycopg.connect(db.target.dsn) as conn:
            with conn.transaction():
                free = {**args, "queues": ["default"], "limits": [1], "limit": 1}
                assert len(conn.execute(db.sql["tasks_claim"], free).fetchall()) == 1
                assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)  # that transaction only
            with conn.transaction():
                limited = {**args, "queue": "default", "limit": 1, "concurrency": 5, "rate_max": None}
                rows = conn.execute(db.sql["tasks_claim_limited"], {**limited, "period_ms": 0}).fetchall()
                assert len(rows) == 1
                assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        assert {db.task_get(t).status for t in ("free1", "free2")} == {Status.PENDING}  # type: ignore[union-attr]
    finally:
        db.close()
