"""Conformance of the system database, on PostgreSQL and SQLite: queue settings."""

from __future__ import annotations

import pytest

from pgtasks.sysdb import ConfigurationError, Status, SystemDatabase
from pgtasks.sysdb.records import ClaimParams, QueueClaim, QueuePause, QueueSettings, QueueUpsert
from tests.integration.sysdb.support import claim, new


def test_queue_settings_upsert_changes_only_what_is_named(sysdb: SystemDatabase) -> None:
    created = sysdb.queue_upsert(
        QueueUpsert(QueueSettings("mail", concurrency=5, rate_limit_max=10, rate_limit_period_sec=60.0))
    )
    assert created.concurrency == 5 and created.rate_limit_max == 10
    changed = sysdb.queue_upsert(
        QueueUpsert(QueueSettings("mail", concurrency=2), frozenset({"concurrency"}))
    )
    assert changed.concurrency == 2 and changed.rate_limit_max == 10 and changed.rate_limit_period_sec == 60.0
    assert [q.name for q in sysdb.queues_get()] == ["mail"]
    assert sysdb.queues_get(("other",)) == []


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        (QueueSettings("q", concurrency=0), "concurrency"),
        (QueueSettings("q", worker_concurrency=-1), "worker_concurrency"),
        (QueueSettings("q", rate_limit_max=5), "rate limit"),
        (QueueSettings("q", rate_limit_max=5, rate_limit_period_sec=float("nan")), "rate_limit_period_sec"),
    ],
)
def test_bad_queue_settings_are_refused(sysdb: SystemDatabase, settings: QueueSettings, field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        sysdb.queue_upsert(QueueUpsert(settings))
    with pytest.raises(ConfigurationError, match="unknown queue settings"):
        sysdb.queue_upsert(QueueUpsert(QueueSettings("q"), frozenset({"name; DROP TABLE queues"})))


def test_paused_queue_is_skipped_by_every_claim_until_resumed(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue(
        [new(f"p{i}", queue="held") for i in range(3)]
        + [new(f"k{i}", queue="held", partition_key="a") for i in range(2)]
        + [new("free", queue="open")]
    )
    paused = sysdb.queue_set_paused(QueuePause("held", True))  # no row yet: created paused
    assert paused.name == "held" and paused.paused
    plain = ClaimParams("w1", "v1", ("held", "open"), 10)
    rated = QueueClaim("held", concurrency=5, rate_limit_max=9, rate_limit_period_ms=60_000)
    limited = ClaimParams("w1", "v1", (rated,), 10)
    partitioned = ClaimParams("w1", "v1", (QueueClaim("held", concurrency=1, partitioned=True),), 10)
    assert [t.task_id for t in sysdb.tasks_claim(plain)] == ["free"]
    assert sysdb.tasks_claim(limited) == []
    assert sysdb.tasks_claim(partitioned) == []
    assert sysdb.task_get("p0").status is Status.ENQUEUED  # type: ignore[union-attr]
    resumed = sysdb.queue_set_paused(QueuePause("held", False))
    assert not resumed.paused
    assert len(sysdb.tasks_claim(partitioned)) == 2  # one per key: the key "a" and the keyless group
    assert len(sysdb.tasks_claim(limited)) == 3
    assert sysdb.tasks_claim(plain) == []


def test_settings_upsert_never_resumes_a_paused_queue(sysdb: SystemDatabase) -> None:
    sysdb.queue_set_paused(QueuePause("mail", True))
    # What every worker does at start with the app's declared queues:
    sysdb.queue_upsert(QueueUpsert(QueueSettings("mail", concurrency=4)))
    [stored] = sysdb.queues_get(("mail",))
    assert stored.paused and stored.concurrency == 4
    assert not sysdb.queue_set_paused(QueuePause("mail", False)).paused
    assert not sysdb.queues_get(("mail",))[0].paused


def test_queue_stats_count_unfinished_tasks_by_state(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue(
        [new(f"e{i}", queue="mail") for i in range(3)]
        + [new("d", queue="mail", delay_until_epoch_ms=sysdb.now_ms() + 3_600_000)]
        + [new("r", queue="reports")]
    )
    assert claim(sysdb, queues=("reports",)) == ["r"]
    stats = {s.name: s for s in sysdb.queue_stats()}
    assert dict(stats["mail"].counts) == {"ENQUEUED": 3, "DELAYED": 1}
    assert dict(stats["reports"].counts) == {"PENDING": 1}
    first = sysdb.task_get("e0")
    assert first is not None and stats["mail"].oldest_waiting_ms == first.created_at
    assert stats["reports"].oldest_waiting_ms is None


def test_queue_latency_is_nearest_rank_percentiles_of_recent_starts(sysdb: SystemDatabase) -> None:
    sysdb.queue_upsert(QueueUpsert(QueueSettings("mail"), changed=frozenset()))
    sysdb.queue_upsert(QueueUpsert(QueueSettings("idle"), changed=frozenset()))
    for batch in range(4):
        sysdb.tasks_enqueue([new(f"e{batch}-{i}", queue="mail") for i in range(5)])
    sysdb.tasks_enqueue([new("never", queue="idle")])
    for _ in range(4):
        claim(sysdb, queues=("mail",), limit=5)
    waits = []
    for batch in range(4):
        for i in range(5):
            t = sysdb.task_get(f"e{batch}-{i}")
            assert t is not None and t.started_at_epoch_ms is not None
            waits.append(t.started_at_epoch_ms - t.created_at)
    waits.sort()
    [mail] = sysdb.queue_latency(window_ms=600_000, sample=1000)  # "idle" started nothing
    assert (mail.queue, mail.count) == ("mail", 20)
    assert (mail.p50_ms, mail.p95_ms) == (waits[9], waits[18])  # ranks ceil(0.5*20), ceil(0.95*20)
    assert sysdb.queue_latency(window_ms=600_000, sample=5)[0].count == 5
    assert sysdb.queue_latency(window_ms=-3_600_000, sample=1000) == []  # a window that ends an hour ago


def test_queue_activity_buckets_recent_starts_by_state(sysdb: SystemDatabase) -> None:
    sysdb.queue_upsert(QueueUpsert(QueueSettings("mail"), changed=frozenset()))
    sysdb.tasks_enqueue([new(f"e{i}", queue="mail") for i in range(3)])
    assert len(claim(sysdb, queues=("mail",), limit=2)) == 2
    activity = sysdb.queue_activity(window_ms=600_000, bucket_ms=60_000)
    assert {(a.queue, a.status) for a in activity} == {("mail", "PENDING")}
    assert sum(a.count for a in activity) == 2
    assert all(a.bucket_ms % 60_000 == 0 for a in activity)
