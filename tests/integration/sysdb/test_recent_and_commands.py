"""Conformance of the system database, on PostgreSQL and SQLite: the recent tasks Flower's API
lists (a window of the newest, filtered and ordered), worker commands and their replies, and
what workers report about themselves."""

from __future__ import annotations

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import (
    CompleteParams,
    ExecutorInfo,
    NewTask,
    Outcome,
    RecentTasksParams,
    WorkerCommand,
)
from tests.integration.sysdb.support import claim, new
from tests.support.inprocess import wait_for


def _tick(sysdb: SystemDatabase) -> None:
    """Let the database clock move on, so the next write has a later time."""
    now = sysdb.now_ms()
    wait_for(lambda: sysdb.now_ms() > now, what="the database clock to move")


def _seed(sysdb: SystemDatabase) -> None:
    """old (ENQUEUED, then claimed: PENDING), b1 and b2 (Beta), a1 (alpha, SUCCESS, changed
    last), d1 (DELAYED), in this creation order."""
    for task in (new("old"), NewTask("b1", "Beta", "{}", "default"), NewTask("b2", "Beta", "{}", "other")):
        sysdb.tasks_enqueue([task])
        _tick(sysdb)
    sysdb.tasks_enqueue([NewTask("a1", "alpha", "{}", "default")])
    _tick(sysdb)
    sysdb.tasks_enqueue(
        [NewTask("d1", "alpha", "{}", "default", delay_until_epoch_ms=sysdb.now_ms() + 3_600_000)]
    )
    _tick(sysdb)
    claim(sysdb, executor="W1", limit=4)  # old, b1, a1 (creation order): PENDING on W1
    _tick(sysdb)
    [a1] = [t for t in sysdb.tasks_get_many(["a1", "nope"])]
    sysdb.tasks_complete(
        CompleteParams("W1", (Outcome("a1", Status.SUCCESS, output="1", claim_token=a1.claim_token),))
    )


def test_recent_tasks_window_filters_and_orders(sysdb: SystemDatabase) -> None:
    _seed(sysdb)

    def ids(**kw: object) -> list[str]:
        return sysdb.tasks_recent_ids(RecentTasksParams(window=kw.pop("window", 100), **kw))  # type: ignore[arg-type]

    # the last change first (a1 completed last; the claim changed old, b1 at once: id desc)
    assert ids()[:1] == ["a1"] and set(ids()) == {"old", "b1", "b2", "a1", "d1"}
    assert ids(order="name", descending=False) == [
        "a1",
        "d1",
        "b1",
        "b2",
        "old",
    ]  # alpha < beta < proj.add, case-folded
    assert ids(order="name", descending=True) == ["old", "b2", "b1", "d1", "a1"]
    # received: the claim, or the creation of a DELAYED task; never received (b2) first
    assert ids(order="received", descending=False)[0] == "b2"
    assert ids(order="received")[-1] == "b2"
    order = (Status.SUCCESS, Status.DELAYED, Status.PENDING, Status.ENQUEUED)
    assert ids(order="status", descending=False, status_order=order) == ["a1", "d1", "b1", "old", "b2"]
    assert ids(status=(Status.PENDING,)) == sorted(["old", "b1"], reverse=True)
    assert set(ids(name="beta")) == {"b1", "b2"} and ids(executor_id="w1", name="BETA") == ["b1"]
    future = sysdb.now_ms() + 7_200_000
    assert set(ids(received_after_epoch_ms=future)) == {"b2"}  # not received: always passes
    assert set(ids(received_before_epoch_ms=0)) == {"b2"}
    assert ids(limit=2, offset=1) == ids()[1:3] and ids(limit=0) == []
    # the window: the 2 newest by creation (a1, d1) and the older PENDING tasks (old, b1)
    assert set(ids(window=2)) == {"a1", "d1", "old", "b1"}
    assert sysdb.task_names_recent(2) == ["alpha"]
    assert sysdb.task_names_recent(100) == ["Beta", "alpha", "proj.add"]  # by code point; b2 too
    assert {t.task_id for t in sysdb.tasks_get_many(["a1", "b2", "nope"])} == {"a1", "b2"}
    assert sysdb.tasks_get_many([]) == []


def test_a_promoted_task_keeps_its_due_time(sysdb: SystemDatabase) -> None:
    due = sysdb.now_ms() + 50
    sysdb.tasks_enqueue([new("later", delay_until_epoch_ms=due)])
    wait_for(lambda: sysdb.now_ms() > due, what="the due time")
    assert sysdb.tasks_promote_delayed() == 1
    later = sysdb.task_get("later")
    assert later is not None and later.status is Status.ENQUEUED and later.delay_until_epoch_ms == due


def test_worker_commands_and_replies(sysdb: SystemDatabase) -> None:
    sysdb.executor_register(ExecutorInfo("w1", "host", 1, "v1", ("default",)))
    sysdb.worker_command_send(WorkerCommand("c1", "w1", "pool_grow", '{"n": 1}'))
    sysdb.worker_command_send(WorkerCommand("c2", "w2", "shutdown"))
    [pending] = sysdb.worker_commands_pending("w1", 60_000)
    assert (pending.command_id, pending.command, pending.arguments, pending.reply) == (
        "c1",
        "pool_grow",
        '{"n": 1}',
        None,
    )
    assert sysdb.worker_command_get("c1") == pending
    sysdb.worker_command_reply("c1", '{"ok": "grown"}')
    assert sysdb.worker_commands_pending("w1", 60_000) == []  # answered
    answered = sysdb.worker_command_get("c1")
    assert answered is not None and answered.reply == '{"ok": "grown"}'
    sysdb.worker_command_forget("c1")
    assert sysdb.worker_command_get("c1") is None
    _tick(sysdb)
    assert sysdb.worker_commands_pending("w2", 0) == []  # older than the age asked for
    sysdb.worker_commands_clear("w2")  # a new w2 starts: the old command is not for it
    assert sysdb.worker_command_get("c2") is None
    assert sysdb.executor_report("w1", '{"pool": {"processes": [7]}}')
    [row] = sysdb.executors_list()
    assert row.details == '{"pool": {"processes": [7]}}'
    assert not sysdb.executor_report("gone", "{}")
