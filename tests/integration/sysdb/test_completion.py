"""Conformance of the system database, on PostgreSQL and SQLite: outcomes, their fences, retries."""

from __future__ import annotations

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import ClaimParams, CompleteParams, Outcome, QueueClaim, StepRecord, StepWrite
from tests.integration.sysdb.support import claim, new, step


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


def test_outcomes_and_the_next_claim_go_together(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b"), new("c"), new("l", queue="limited")])
    [run] = sysdb.tasks_claim(ClaimParams("w1", "v1", ("default",), 1))
    done = Outcome("a", Status.SUCCESS, "3", claim_token=run.claim_token)
    stale = Outcome("b", Status.SUCCESS, "1", claim_token="not-its-claim")
    written, claimed = sysdb.tasks_complete_claim(
        CompleteParams("w1", (done, stale)), ClaimParams("w1", "v1", ("default",), 5)
    )
    assert written == ["a"]  # the fence holds: b was not claimed yet
    assert [t.task_id for t in claimed] == ["b", "c"]
    assert all(t.status is Status.PENDING and t.executor_id == "w1" for t in claimed)
    a = sysdb.task_get("a")
    assert a is not None and a.status is Status.SUCCESS and a.output == "3"
    # Nothing left to claim: the outcomes are still written. A limited queue is claimed exactly.
    limited = QueueClaim("limited", concurrency=1)
    outcomes = tuple(Outcome(t.task_id, Status.ERROR, None, "{}", claim_token=t.claim_token) for t in claimed)
    written, claimed = sysdb.tasks_complete_claim(
        CompleteParams("w1", outcomes), ClaimParams("w1", "v1", ("default", limited), 5)
    )
    assert sorted(written) == ["b", "c"] and [t.task_id for t in claimed] == ["l"]
    written, claimed = sysdb.tasks_complete_claim(
        CompleteParams("w1", outcomes), ClaimParams("w1", "v1", ("default",), 5)
    )
    assert written == [] and claimed == []
