"""Conformance of the system database, on PostgreSQL and SQLite: step checkpoints and their fences."""

from __future__ import annotations

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import ClaimParams, RecoverStaleParams, StepRecord, StepWrite, TaskOwner
from tests.integration.sysdb.support import claim, new, step


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
    # One checkpoint alone goes through the same statement, with the same fences.
    assert sysdb.steps_record_many([step_for("c", 2, "w1", None)]) == [StepWrite.NOT_OWNER]
    assert sysdb.steps_record_many([step_for("a", 2, "w2", None)]) == [StepWrite.RECORDED_STOPPED]
    assert sysdb.steps_record_many([step_for("c", 2, "w2", None)]) == [StepWrite.RECORDED]
    # The ownership reads of many tasks, grouped: only c still runs on w2 (any token, or its own).
    c_token = sysdb.task_get("c").claim_token  # type: ignore[union-attr]
    owners = [
        TaskOwner("c", "w2"),
        TaskOwner("c", "w2", c_token),
        TaskOwner("c", "w2", "not-the-token"),
        TaskOwner("c", "w1"),
        TaskOwner("a", "w2"),
        TaskOwner("missing", "w2"),
    ]
    assert sysdb.tasks_owned_by(owners) == [True, True, False, False, False, False]


def test_group_commit_stores_every_field_as_given(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b")])
    claim(sysdb)
    token = sysdb.task_get("b").claim_token  # type: ignore[union-attr]
    started = 4_102_444_800_123  # past 2**31: a bigint
    steps = [
        StepRecord("a", 1, "s1", '"h\u00e9 \u2603 \U0001f600"', None, "json", started, executor_id="w1"),
        StepRecord("a", 2, "s2", None, '{"type": "E"}', "json", 0, executor_id="w1"),
        StepRecord("b", 1, "s1", "", None, "pickle", started + 1, executor_id="w1", claim_token=token),
    ]
    assert sysdb.steps_record_many(steps) == [StepWrite.RECORDED] * 3
    found = sysdb.steps_get_many(["a", "b"])
    stored = [
        (s.function_id, s.function_name, s.output, s.error, s.serialization, s.started_at_epoch_ms)
        for task_id in ("a", "b")
        for s in found[task_id]
    ]
    assert stored == [
        (s.function_id, s.function_name, s.output, s.error, s.serialization, s.started_at_epoch_ms)
        for s in steps
    ]


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


def test_steps_of_many_tasks_in_one_read(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b"), new("c")])
    claim(sysdb)
    sysdb.steps_record_many([step("a", 2), step("a", 1), step("b", 1)])
    found = sysdb.steps_get_many(["a", "b", "c"])
    assert {k: [s.function_id for s in v] for k, v in found.items()} == {"a": [1, 2], "b": [1], "c": []}
    assert sysdb.steps_get_many([]) == {}
