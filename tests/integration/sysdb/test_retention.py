"""Retention on PostgreSQL and SQLite: which finished tasks pruning deletes (with their steps
and links), what it never deletes (unfinished tasks, dead letters, a task a waiting canvas
child needs), and forget()."""

from __future__ import annotations

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    CompleteParams,
    LinkKind,
    NewTask,
    Outcome,
    QueueSettings,
    QueueUpsert,
    TaskLink,
)
from tests.integration.sysdb.support import JsonLinks, claim, step, task
from tests.support.inprocess import wait_for

LINKS = JsonLinks()


def finish(db: SystemDatabase, task_id: str, status: Status = Status.SUCCESS) -> None:
    record = db.task_get(task_id)
    assert record is not None and record.status is Status.PENDING
    outcome = Outcome(
        task_id,
        status,
        "1" if status is Status.SUCCESS else None,
        None if status is Status.SUCCESS else "{}",
        record.claim_token,
        has_links=record.has_links,
    )
    assert db.tasks_complete(CompleteParams("w1", (outcome,), LINKS)) == [task_id]


def ids_left(db: SystemDatabase, ids: list[str]) -> list[str]:
    return [i for i in ids if db.task_get(i) is not None]


def test_finished_tasks_go_with_their_steps_and_unfinished_ones_stay(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([task(i) for i in ("done", "failed", "running", "waiting")])
    sysdb.tasks_enqueue(
        [NewTask("later", "proj.t", '{"args":[],"kwargs":{}}', "default", delay_ms=3_600_000)]
    )
    sysdb.tasks_enqueue([NewTask("other", "proj.t", '{"args":[],"kwargs":{}}', "other")])
    assert sorted(claim(sysdb, limit=3)) == ["done", "failed", "running"]
    sysdb.step_record(step("done", 1))
    finish(sysdb, "done")
    finish(sysdb, "failed", Status.ERROR)
    wait_for(lambda: sysdb.tasks_prunable(0) == {"default": 2}, what="two finished tasks to be prunable")
    assert sysdb.tasks_prunable(3_600_000) == {}  # finished just now: younger than an hour
    assert sysdb.tasks_prune(3_600_000, 1000) == {}
    assert sysdb.tasks_prune(0, 1000) == {"default": 2}
    left = ids_left(sysdb, ["done", "failed", "running", "waiting", "later", "other"])
    assert left == ["running", "waiting", "later", "other"]
    assert sysdb.steps_get("done") == []
    assert sysdb.tasks_prune(0, 1000) == {}


def test_batches_are_bounded(sysdb: SystemDatabase) -> None:
    ids = [f"t{i}" for i in range(5)]
    sysdb.tasks_enqueue([task(i) for i in ids])
    for task_id in claim(sysdb, limit=5):
        finish(sysdb, task_id)
    wait_for(lambda: sysdb.tasks_prunable(0) == {"default": 5}, what="five prunable tasks")
    assert sysdb.tasks_prune(0, 2) == {"default": 2}
    assert sysdb.tasks_prune(0, 2) == {"default": 2}
    assert sysdb.tasks_prune(0, 2) == {"default": 1}
    assert ids_left(sysdb, ids) == []


def test_a_task_a_waiting_canvas_needs_stays_until_the_canvas_moves_on(sysdb: SystemDatabase) -> None:
    # a -> b (a chain), and a chord h1 + h2 -> body
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("a", 1), task("b"), task("h1", 1), task("h2", 2), task("body")),
            waiting=frozenset({"b", "body"}),
            links=(
                TaskLink("a", "b", LinkKind.CHAIN),
                TaskLink("h1", "body", LinkKind.CHORD, 0),
                TaskLink("h2", "body", LinkKind.CHORD, 1),
            ),
        )
    )
    assert sorted(claim(sysdb, limit=3)) == ["a", "h1", "h2"]
    finish(sysdb, "h1")  # the chord body still waits for h2: h1's result must stay
    finish(sysdb, "a")  # b is released (ENQUEUED) but has not run: a stays too
    wait_for(lambda: sysdb.task_get("b").status is Status.ENQUEUED, what="b released")  # type: ignore[union-attr]
    assert sysdb.tasks_prune(0, 1000) == {}
    assert ids_left(sysdb, ["a", "h1"]) == ["a", "h1"]
    assert sysdb.task_forget("h1") is False
    assert claim(sysdb) == ["b"]
    finish(sysdb, "b")
    wait_for(lambda: sysdb.tasks_prunable(0) == {"default": 2}, what="a and b prunable")
    assert sysdb.tasks_prune(0, 1000) == {"default": 2}
    assert ids_left(sysdb, ["a", "b", "h1"]) == ["h1"]


def test_forget_deletes_one_finished_task_only(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([task("keep"), task("forget-me"), task("unfinished")])
    assert sorted(claim(sysdb, limit=2)) == ["forget-me", "keep"]
    finish(sysdb, "forget-me")
    finish(sysdb, "keep")
    assert sysdb.task_forget("unfinished") is False
    assert sysdb.task_forget("no-such-task") is False
    assert sysdb.task_forget("forget-me") is True
    assert ids_left(sysdb, ["keep", "forget-me", "unfinished"]) == ["keep", "unfinished"]


def test_each_queue_keeps_its_tasks_for_its_own_age(sysdb: SystemDatabase) -> None:
    sysdb.queue_upsert(QueueUpsert(QueueSettings("brief", result_expires_sec=0.001)))
    sysdb.queue_upsert(QueueUpsert(QueueSettings("kept", result_expires_sec=0)))  # until deleted by hand
    sysdb.queue_upsert(QueueUpsert(QueueSettings("plain")))  # the default age
    tasks = [NewTask(f"t-{q}", "proj.t", '{"args":[],"kwargs":{}}', q) for q in ("brief", "kept", "plain")]
    sysdb.tasks_enqueue(tasks)
    for task_id in claim(sysdb, limit=3, queues=("brief", "kept", "plain")):
        finish(sysdb, task_id)
    wait_for(lambda: sysdb.tasks_prunable(3_600_000) == {"brief": 1}, what="the brief queue's task to expire")
    assert sysdb.tasks_prunable(None) == {"brief": 1}  # no default age: only the queue's own
    wait_for(lambda: sysdb.tasks_prunable(1) == {"brief": 1, "plain": 1}, what="the default age to pass")
    # An operator's explicit age applies to every queue, the kept one too.
    assert sysdb.tasks_prunable(1, per_queue=False) == {"brief": 1, "kept": 1, "plain": 1}
    assert sysdb.tasks_prune(3_600_000, 1000) == {"brief": 1}
    assert sysdb.tasks_prune(1, 1000) == {"plain": 1}
    assert ids_left(sysdb, ["t-brief", "t-kept", "t-plain"]) == ["t-kept"]
    assert sysdb.tasks_prune(1, 1000, queue="kept", per_queue=False) == {"kept": 1}
