"""One conformance suite for the system database, run on PostgreSQL and on SQLite."""

from __future__ import annotations

import pytest

from pgtasks.sysdb import ConfigurationError, Status, SystemDatabase
from pgtasks.sysdb.records import (
    ClaimParams,
    CompleteParams,
    ExecutorInfo,
    ForkParams,
    ListTasksParams,
    NewTask,
    Outcome,
    QueueClaim,
    QueueSettings,
    QueueUpsert,
    RecoverOwnParams,
    RecoverStaleParams,
    ReleaseStrayParams,
    StepRecord,
    StepWrite,
)
from pgtasks.sysdb.sqlfiles import load_migrations
from tests.support.inprocess import wait_for


def new(task_id: str, queue: str = "default", **kw: object) -> NewTask:
    return NewTask(
        task_id=task_id, name="proj.add", inputs='{"args":[1,2],"kwargs":{}}', queue_name=queue, **kw
    )  # type: ignore[arg-type]


def claim(
    db: SystemDatabase,
    executor: str = "w1",
    limit: int = 10,
    version: str = "v1",
    queues: tuple[str, ...] = ("default",),
) -> list[str]:
    return [t.task_id for t in db.tasks_claim(ClaimParams(executor, version, queues, limit))]


def step(task_id: str, fid: int, executor: str = "w1", output: str = "1") -> StepRecord:
    return StepRecord(task_id, fid, f"step{fid}", output, None, executor_id=executor)


def test_migrate_is_idempotent(sysdb: SystemDatabase) -> None:
    assert sysdb.migrate() == []
    expected = [m.version for m in load_migrations(sysdb.target.dialect)]
    assert len(expected) >= 2 and [m.version for m in sysdb.migrations_applied()] == expected


def test_enqueue_inserts_and_keeps_existing_task_ids(sysdb: SystemDatabase) -> None:
    first = sysdb.tasks_enqueue([new("a"), new("b")])
    assert [(r.task_id, r.inserted) for r in first] == [("a", True), ("b", True)]
    again = sysdb.tasks_enqueue([new("a"), new("c")])
    assert [(r.task_id, r.inserted, r.duplicate_of) for r in again] == [("a", False, None), ("c", True, None)]
    task = sysdb.task_get("a")
    assert task is not None and task.status is Status.ENQUEUED and task.name == "proj.add"
    assert sysdb.task_get("missing") is None


def test_deduplication_id_is_unique_per_queue_until_the_task_finishes(sysdb: SystemDatabase) -> None:
    assert sysdb.tasks_enqueue([new("a", deduplication_id="k")])[0].inserted
    dup = sysdb.tasks_enqueue([new("b", deduplication_id="k")])[0]
    assert not dup.inserted and dup.duplicate_of == "a"
    assert sysdb.tasks_enqueue([new("c", queue="other", deduplication_id="k")])[0].inserted
    assert claim(sysdb) == ["a"]
    assert sysdb.tasks_complete(CompleteParams("w1", (Outcome("a", Status.SUCCESS, "3"),))) == ["a"]
    assert sysdb.tasks_enqueue([new("d", deduplication_id="k")])[0].inserted


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


def test_delayed_tasks_wait_until_due(sysdb: SystemDatabase) -> None:
    now = sysdb.now_ms()
    sysdb.tasks_enqueue([new("later", delay_ms=3_600_000), new("past", delay_until_epoch_ms=now - 1)])
    later = sysdb.task_get("later")
    assert later is not None and later.status is Status.DELAYED
    assert later.delay_until_epoch_ms is not None and later.delay_until_epoch_ms >= now + 3_600_000
    assert claim(sysdb) == ["past"]
    assert sysdb.tasks_promote_delayed() == 0
    sysdb.tasks_enqueue([new("due", delay_ms=200)])
    due = sysdb.task_get("due")
    assert due is not None and due.status is Status.DELAYED and due.delay_until_epoch_ms is not None
    wait_for(lambda: sysdb.now_ms() > due.delay_until_epoch_ms, what="the database clock to pass the delay")
    assert sysdb.tasks_promote_delayed() == 1
    assert claim(sysdb) == ["due"]


def test_complete_is_fenced_on_the_executor(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b")])
    claim(sysdb)
    assert sysdb.tasks_complete(CompleteParams("intruder", (Outcome("a", Status.SUCCESS, "1"),))) == []
    written = sysdb.tasks_complete(
        CompleteParams(
            "w1",
            (Outcome("a", Status.SUCCESS, "3"), Outcome("b", Status.ERROR, None, '{"type":"ValueError"}')),
        )
    )
    assert sorted(written) == ["a", "b"]
    a, b = sysdb.task_get("a"), sysdb.task_get("b")
    assert a is not None and a.status is Status.SUCCESS and a.output == "3"
    assert b is not None and b.status is Status.ERROR and b.error == '{"type":"ValueError"}'
    # An outcome is written once: a second write changes nothing.
    assert sysdb.tasks_complete(CompleteParams("w1", (Outcome("a", Status.ERROR, None, "x"),))) == []


def test_step_record_conflicts_and_fences(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    claim(sysdb)
    assert sysdb.step_record(step("a", 1)) is StepWrite.RECORDED
    # The same executor retrying after a lost COMMIT reply recognises its own row.
    assert sysdb.step_record(step("a", 1)) is StepWrite.RECORDED
    assert sysdb.step_record(step("a", 2, executor="w2")) is StepWrite.NOT_OWNER
    assert [s.function_id for s in sysdb.steps_get("a")] == [1]
    assert sysdb.task_owned_by("a", "w1") and not sysdb.task_owned_by("a", "w2")


def test_step_written_by_another_executor_is_a_conflict(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    claim(sysdb, executor="w1")
    assert sysdb.step_record(step("a", 1, executor="w1")) is StepWrite.RECORDED
    # w1's lease expires; w2 takes the task over and tries to record the same step.
    sysdb.tasks_recover_stale(RecoverStaleParams(lease_ms=0))
    assert claim(sysdb, executor="w2") == ["a"]
    assert sysdb.step_record(step("a", 1, executor="w2")) is StepWrite.CONFLICT
    assert sysdb.step_record(step("a", 2, executor="w1")) is StepWrite.NOT_OWNER
    assert sysdb.step_record(step("a", 2, executor="w2")) is StepWrite.RECORDED
    assert [(s.function_id, s.executor_id) for s in sysdb.steps_get("a")] == [(1, "w1"), (2, "w2")]


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


def test_executor_register_returns_previous_and_heartbeats(sysdb: SystemDatabase) -> None:
    info = ExecutorInfo("w1", "host", 123, "v1", ("default", "emails"))
    assert sysdb.executor_register(info) is None
    previous = sysdb.executor_register(info)
    assert previous is not None and previous.pid == 123 and previous.queues == ("default", "emails")
    assert sysdb.executor_heartbeat("w1")
    sysdb.executor_unregister("w1")
    assert not sysdb.executor_heartbeat("w1")


def test_cancel_resume_and_fork(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    claim(sysdb)
    sysdb.step_record(step("a", 1, output='"one"'))
    sysdb.step_record(step("a", 2, output='"two"'))
    assert sysdb.task_cancel("a")
    assert not sysdb.task_cancel("a")
    assert not sysdb.task_owned_by("a", "w1")
    assert sysdb.tasks_complete(CompleteParams("w1", (Outcome("a", Status.SUCCESS, "1"),))) == []
    assert sysdb.task_resume("a")
    resumed = sysdb.task_get("a")
    assert resumed is not None and resumed.status is Status.ENQUEUED and resumed.recovery_attempts == 0
    forked = sysdb.task_fork(ForkParams("a", "a-fork", start_step=2))
    assert forked.forked_from == "a" and forked.status is Status.ENQUEUED
    assert [(s.function_id, s.output) for s in sysdb.steps_get("a-fork")] == [(1, '"one"')]


def test_list_filters(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b", queue="q2"), new("c")])
    claim(sysdb, limit=1)
    assert [t.task_id for t in sysdb.tasks_list(ListTasksParams(newest_first=False))] == ["a", "b", "c"]
    assert [t.task_id for t in sysdb.tasks_list(ListTasksParams(status=(Status.PENDING,)))] == ["a"]
    assert [t.task_id for t in sysdb.tasks_list(ListTasksParams(queue_name="q2"))] == ["b"]
    assert len(sysdb.tasks_list(ListTasksParams(limit=2))) == 2
    assert sysdb.tasks_list(ListTasksParams(name="other")) == []
    future = sysdb.now_ms() + 60_000
    assert sysdb.tasks_list(ListTasksParams(created_after_epoch_ms=future)) == []


def test_versions(sysdb: SystemDatabase) -> None:
    sysdb.version_register("v1")
    sysdb.version_register("v1")
    assert [name for name, _ in sysdb.versions_list()] == ["v1"]


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


def test_expired_tasks_are_never_claimed_and_get_cancelled(sysdb: SystemDatabase) -> None:
    now = sysdb.now_ms()
    sysdb.tasks_enqueue(
        [new("stale", expires_at_epoch_ms=now - 1), new("fresh", expires_at_epoch_ms=now + 3_600_000)]
    )
    assert claim(sysdb) == ["fresh"]
    assert sysdb.tasks_expire() == 1
    stale = sysdb.task_get("stale")
    assert stale is not None and stale.status is Status.CANCELLED and "expired" in (stale.error or "")


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


def test_dead_lettering_frees_the_deduplication_id(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a", deduplication_id="k", max_recovery_attempts=0)])
    claim(sysdb)
    assert sysdb.tasks_recover_own(RecoverOwnParams("w1")).dead_lettered == ["a"]
    assert sysdb.tasks_enqueue([new("b", deduplication_id="k")])[0].inserted


def test_resume_clears_an_expiry_that_has_passed(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a", expires_at_epoch_ms=sysdb.now_ms() - 1)])
    assert sysdb.tasks_expire() == 1
    assert sysdb.task_resume("a")
    assert sysdb.tasks_expire() == 0
    a = sysdb.task_get("a")
    assert a is not None and a.status is Status.ENQUEUED and a.error is None and a.expires_at_epoch_ms is None


def test_every_write_of_an_older_run_is_fenced_by_the_claim_token(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    [old] = sysdb.tasks_claim(ClaimParams("w1", "v1", ("default",), 1))
    assert sysdb.task_cancel("a") and sysdb.task_resume("a")
    [run] = sysdb.tasks_claim(ClaimParams("w1", "v1", ("default",), 1))  # same executor, new run
    assert old.claim_token and run.claim_token and old.claim_token != run.claim_token

    def step_of(record: object, fid: int) -> StepRecord:
        return StepRecord(
            "a", fid, f"step{fid}", '"x"', None, executor_id="w1", claim_token=record.claim_token
        )  # type: ignore[attr-defined]

    assert not sysdb.task_owned_by("a", "w1", old.claim_token)
    assert sysdb.task_owned_by("a", "w1", run.claim_token)
    assert sysdb.step_record(step_of(run, 1)) is StepWrite.RECORDED
    assert sysdb.step_record(step_of(run, 1)) is StepWrite.RECORDED  # own retry after a lost reply
    assert sysdb.step_record(step_of(old, 1)) is StepWrite.CONFLICT
    assert sysdb.step_record(step_of(old, 2)) is StepWrite.NOT_OWNER
    stale = Outcome("a", Status.SUCCESS, '"old"', claim_token=old.claim_token)
    assert sysdb.tasks_complete(CompleteParams("w1", (stale,))) == []
    fresh = Outcome("a", Status.SUCCESS, '"new"', claim_token=run.claim_token)
    assert sysdb.tasks_complete(CompleteParams("w1", (fresh,))) == ["a"]
    done = sysdb.task_get("a")
    assert done is not None and done.output == '"new"'


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


def test_relative_expiry_uses_the_database_clock(sysdb: SystemDatabase) -> None:
    before = sysdb.now_ms()
    sysdb.tasks_enqueue([new("a", expires_in_ms=3_600_000)])
    a = sysdb.task_get("a")
    assert a is not None and a.expires_at_epoch_ms is not None
    assert before + 3_600_000 <= a.expires_at_epoch_ms <= sysdb.now_ms() + 3_600_000


def test_group_commit_of_checkpoints_reports_each_step(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b"), new("c")])
    sysdb.tasks_claim(ClaimParams("w1", "v1", ("default",), 3))
    sysdb.tasks_recover_stale(RecoverStaleParams(lease_ms=0))  # w1 is gone: w2 takes all three
    sysdb.tasks_claim(ClaimParams("w2", "v1", ("default",), 3))
    for task_id in ("a", "b"):
        sysdb.task_cancel(task_id)

    def step_for(task_id: str, fid: int, executor: str, token: str | None) -> StepRecord:
        return StepRecord(task_id, fid, f"s{fid}", '"x"', None, executor_id=executor, claim_token=token)

    # a: cancelled while w2 ran it (a step that finished still counts, and says stop); b: a
    # stale claim token; c: w2's, running.
    results = sysdb.steps_record_many(
        [
            step_for("a", 1, "w2", None),
            step_for("b", 1, "w2", "not-the-token"),
            step_for("c", 1, "w2", None),
        ]
    )
    assert results == [StepWrite.RECORDED_STOPPED, StepWrite.NOT_OWNER, StepWrite.RECORDED]
    again = sysdb.steps_record_many(
        [step_for("a", 1, "w2", None), step_for("c", 1, "w9", None), step_for("c", 1, "w2", None)]
    )
    # w2's own retries (a cancelled: stop; c still running: go on); w9 lost the race
    assert again == [StepWrite.RECORDED_STOPPED, StepWrite.CONFLICT, StepWrite.RECORDED]


def test_a_checkpoint_after_cancel_is_kept_and_says_stop(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    run = sysdb.tasks_claim(ClaimParams("w1", "v1", ("default",), 1))[0]
    step = StepRecord("a", 1, "s1", '"x"', None, executor_id="w1", claim_token=run.claim_token)
    assert sysdb.step_record(step) is StepWrite.RECORDED
    sysdb.task_cancel("a")
    later = StepRecord("a", 2, "s2", '"y"', None, executor_id="w1", claim_token=run.claim_token)
    assert sysdb.step_record(later) is StepWrite.RECORDED_STOPPED
    assert sysdb.step_record(later) is StepWrite.RECORDED_STOPPED  # a retry after a lost reply
    assert sysdb.step_record(step) is StepWrite.RECORDED_STOPPED
    assert [s.function_id for s in sysdb.steps_get("a")] == [1, 2]


def test_a_retry_sends_the_task_back_from_scratch_under_the_same_id(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("r", deduplication_id="once")])
    run = sysdb.tasks_claim(ClaimParams("w1", "v1", ("default",), 1))[0]
    assert sysdb.step_record(step("r", 1)) is StepWrite.RECORDED
    retry = Outcome("r", Status.ENQUEUED, error='{"why": 1}', claim_token=run.claim_token, retry_in_ms=0)
    assert sysdb.tasks_complete(CompleteParams("w1", (retry,))) == ["r"]
    back = sysdb.task_get("r")
    assert back is not None and back.status is Status.ENQUEUED and back.retries == 1
    assert back.recovery_attempts == 0 and back.executor_id is None and back.error == '{"why": 1}'
    assert back.deduplication_id == "once"  # still the same logical task
    assert sysdb.steps_get("r") == []  # it runs again from scratch
    assert sysdb.tasks_complete(CompleteParams("w1", (retry,))) == []  # fenced: not PENDING any more
    again = sysdb.tasks_claim(ClaimParams("w2", "v1", ("default",), 1))[0]
    later = Outcome("r", Status.ENQUEUED, claim_token=again.claim_token, retry_in_ms=60_000)
    before = sysdb.now_ms()
    assert sysdb.tasks_complete(CompleteParams("w2", (later,))) == ["r"]
    delayed = sysdb.task_get("r")
    assert delayed is not None and delayed.status is Status.DELAYED and delayed.retries == 2
    assert delayed.delay_until_epoch_ms is not None and delayed.delay_until_epoch_ms >= before + 60_000
    assert sysdb.tasks_claim(ClaimParams("w2", "v1", ("default",), 1)) == []
