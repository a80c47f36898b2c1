"""Conformance of the system database, on PostgreSQL and SQLite: executors, leases, recovery,
dead letters and stray claims."""

from __future__ import annotations

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import (
    CompleteParams,
    ExecutorInfo,
    Outcome,
    RecoverOwnParams,
    RecoverStaleParams,
    ReleaseStrayParams,
)
from tests.integration.sysdb.support import claim, new
from tests.support.inprocess import wait_for


def test_recover_own_requeues_and_dead_letters(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a", max_recovery_attempts=1), new("b", max_recovery_attempts=5)])
    claim(sysdb)
    report = sysdb.tasks_recover_own(RecoverOwnParams("w1"))
    assert sorted(report.requeued) == ["a", "b"] and report.dead_lettered == []
    claim(sysdb)  # second start of each: a has now used its one recovery
    report = sysdb.tasks_recover_own(RecoverOwnParams("w1"))
    assert report.requeued == ["b"] and report.dead_lettered == ["a"]
    a = sysdb.task_get("a")
    assert a is not None and a.status is Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED and a.recovery_attempts == 2
    # After a deploy the restarted executor (now v2) gives back its v1 tasks too; they stay
    # pinned to v1, so only a v1 worker claims them.
    [b] = claim(sysdb)
    assert sysdb.tasks_recover_own(RecoverOwnParams("w1")).requeued == [b]
    assert claim(sysdb, version="v2") == []
    assert claim(sysdb, version="v1") == [b]


def test_recover_stale_uses_the_lease(sysdb: SystemDatabase) -> None:
    for executor in ("live", "dead"):
        sysdb.executor_register(ExecutorInfo(executor, "host", 1, "v1", ("default",)))
    sysdb.tasks_enqueue([new("x"), new("y"), new("orphan")])
    claim(sysdb, executor="live", limit=1)
    claim(sysdb, executor="dead", limit=1)
    claim(sysdb, executor="never-registered", limit=1)
    assert sysdb.tasks_recover_stale(RecoverStaleParams(lease_ms=60_000)).requeued == ["orphan"]
    beat = max(e.last_heartbeat for e in sysdb.executors_list())
    wait_for(lambda: sysdb.now_ms() > beat, what="the database clock to move past the heartbeats")
    report = sysdb.tasks_recover_stale(RecoverStaleParams(lease_ms=0, exclude_executor_id="live"))
    assert report.requeued == ["y"]
    x = sysdb.task_get("x")
    assert x is not None and x.status is Status.PENDING
    assert {e.executor_id for e in sysdb.executors_list()} == set()


def test_after_an_outage_an_executor_recovers_nothing_until_its_hold_is_over(sysdb: SystemDatabase) -> None:
    """An outage leaves every heartbeat old. An executor whose own lease lapsed recovers
    nothing (a maintenance round that waited the outage out for a connection must not take
    live workers' tasks); its first heartbeat after the gap holds it back for the gap plus one
    lease, while the others reconnect and renew theirs; then it recovers as before."""
    lease = 300
    for executor in ("me", "other"):
        sysdb.executor_register(ExecutorInfo(executor, "host", 1, "v1", ("default",), lease_ms=lease))
    sysdb.tasks_enqueue([new("theirs")])
    claim(sysdb, executor="other", limit=1)
    last_beat = max(e.last_heartbeat for e in sysdb.executors_list())
    wait_for(lambda: sysdb.now_ms() > last_beat + 2 * lease, what="an outage of two leases")
    assert sysdb.tasks_recover_stale(RecoverStaleParams(exclude_executor_id="me")).requeued == []
    before = sysdb.now_ms()
    assert sysdb.executor_heartbeat("me")  # gap > 2 leases: held back for gap + lease
    assert sysdb.tasks_recover_stale(RecoverStaleParams(exclude_executor_id="me")).requeued == []
    assert {e.executor_id for e in sysdb.executors_list()} == {"me", "other"}  # no row dropped either
    theirs = sysdb.task_get("theirs")
    assert theirs is not None and theirs.status is Status.PENDING and theirs.executor_id == "other"

    def recovered() -> bool:
        assert sysdb.executor_heartbeat("me")  # kept alive: short gaps set no new hold
        return sysdb.tasks_recover_stale(RecoverStaleParams(exclude_executor_id="me")).requeued == ["theirs"]

    wait_for(recovered, timeout=30, what="the recovery after the hold")
    assert sysdb.now_ms() >= before + (before - last_beat) + lease  # not before the hold ended


def test_executor_register_returns_previous_and_heartbeats(sysdb: SystemDatabase) -> None:
    info = ExecutorInfo("w1", "host", 123, "v1", ("default", "emails"))
    assert sysdb.executor_register(info) is None
    previous = sysdb.executor_register(info)
    assert previous is not None and previous.pid == 123 and previous.queues == ("default", "emails")
    assert sysdb.executor_heartbeat("w1")
    sysdb.executor_unregister("w1")
    assert not sysdb.executor_heartbeat("w1")


def test_release_gives_a_task_back_and_counts_toward_the_dead_letter(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a", deduplication_id="k", max_recovery_attempts=1)])
    claim(sysdb)
    release = CompleteParams("w1", (Outcome("a", Status.ENQUEUED),))
    assert sysdb.tasks_complete(CompleteParams("other", release.outcomes)) == []
    assert sysdb.tasks_complete(release) == ["a"]
    a = sysdb.task_get("a")
    assert a is not None and a.status is Status.ENQUEUED and a.executor_id is None
    assert a.deduplication_id == "k"  # still unfinished: the deduplication id stays held
    claim(sysdb)
    assert sysdb.tasks_complete(release) == ["a"]
    a = sysdb.task_get("a")
    assert a is not None and a.status is Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED and a.recovery_attempts == 2


def test_dead_lettering_frees_the_deduplication_id(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a", deduplication_id="k", max_recovery_attempts=0)])
    claim(sysdb)
    assert sysdb.tasks_recover_own(RecoverOwnParams("w1")).dead_lettered == ["a"]
    assert sysdb.tasks_enqueue([new("b", deduplication_id="k")])[0].inserted


def test_each_executor_is_judged_by_its_own_lease(sysdb: SystemDatabase) -> None:
    sysdb.executor_register(ExecutorInfo("patient", "host", 1, "v1", ("default",), lease_ms=3_600_000))
    sysdb.executor_register(ExecutorInfo("hasty", "host", 2, "v1", ("default",), lease_ms=1))
    sysdb.tasks_enqueue([new("p"), new("h")])
    claim(sysdb, executor="patient", limit=1)
    claim(sysdb, executor="hasty", limit=1)
    wait_for(
        lambda: sysdb.now_ms() > max(e.last_heartbeat for e in sysdb.executors_list()) + 1,
        what="the short lease to pass",
    )
    assert sysdb.tasks_recover_stale(RecoverStaleParams()).requeued == ["h"]
    assert [e.executor_id for e in sysdb.executors_list()] == ["patient"]


def test_stray_claims_are_given_back(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("known"), new("stray")])
    claim(sysdb)
    assert sysdb.tasks_release_stray(ReleaseStrayParams("w1", ("known", "stray"), 0)) == []
    assert sysdb.tasks_release_stray(ReleaseStrayParams("w1", ("known",), 3_600_000)) == []  # too young
    wait_for(lambda: sysdb.now_ms() > (sysdb.task_get("stray").started_at_epoch_ms or 0), what="a tick")
    assert sysdb.tasks_release_stray(ReleaseStrayParams("w1", ("known",), 0)) == ["stray"]
    assert claim(sysdb, executor="w2") == ["stray"]
