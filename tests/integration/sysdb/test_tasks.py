"""Conformance of the system database, on PostgreSQL and SQLite: enqueue, get, list, delays,
expiry, cancel, resume and fork."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    CompleteParams,
    EndReason,
    ForkParams,
    ListTasksParams,
    NewTask,
    Outcome,
)
from tests.integration.sysdb.support import JsonLinks, claim, new, step
from tests.support.inprocess import wait_for


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


def test_next_due_is_the_earliest_delayed_task_of_the_queues(sysdb: SystemDatabase) -> None:
    assert sysdb.tasks_next_due(("default",)) is None
    sysdb.tasks_enqueue(
        [
            new("hour", delay_ms=3_600_000),
            new("minute", delay_ms=60_000),
            new("elsewhere", queue="other", delay_ms=1_000),
            new("now"),
        ]
    )
    due = sysdb.tasks_next_due(("default",))
    assert due is not None and 50_000 < due <= 60_000
    other = sysdb.tasks_next_due(("other", "default"))
    assert other is not None and other <= 1_000
    assert sysdb.tasks_next_due(("nobody",)) is None
    sysdb.tasks_enqueue([new("overdue", delay_until_epoch_ms=sysdb.now_ms() + 50)])
    wait_for(lambda: sysdb.tasks_next_due(("default",)) == 0, what="an overdue task to read as due now")
    # One round of the due timer: the overdue task promoted, the next one due not counting it.
    promoted, due = sysdb.tasks_promote_due(("default",))
    assert promoted == 1 and due is not None and 50_000 < due <= 60_000
    assert sysdb.task_get("overdue").status is Status.ENQUEUED  # type: ignore[union-attr]
    assert sysdb.tasks_promote_due(("nobody",)) == (0, None)


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


def test_expired_tasks_are_never_claimed_and_get_cancelled(sysdb: SystemDatabase) -> None:
    now = sysdb.now_ms()
    sysdb.tasks_enqueue(
        [new("stale", expires_at_epoch_ms=now - 1), new("fresh", expires_at_epoch_ms=now + 3_600_000)]
    )
    assert claim(sysdb) == ["fresh"]
    assert sysdb.tasks_expire() == ["stale"]
    stale = sysdb.task_get("stale")
    assert stale is not None and stale.status is Status.CANCELLED and "expired" in (stale.error or "")


def test_a_claimed_task_whose_expiry_passed_ends_expired_on_its_executor_only(sysdb: SystemDatabase) -> None:
    expires = sysdb.now_ms() + 2000  # room for the claim on a loaded machine
    sysdb.tasks_enqueue([new("held", expires_at_epoch_ms=expires), new("later")])
    assert claim(sysdb) == ["held", "later"]
    record = sysdb.task_get("held")
    assert record is not None
    assert not sysdb.task_expire_claimed("held", "w1", record.claim_token, JsonLinks())  # not yet
    wait_for(lambda: sysdb.now_ms() > expires, timeout=10, what="the expiry to pass")
    assert not sysdb.task_expire_claimed("held", "w2", record.claim_token, JsonLinks())  # not its executor
    assert not sysdb.task_expire_claimed("later", "w1", None, JsonLinks())  # no expiry
    assert sysdb.task_expire_claimed("held", "w1", record.claim_token, JsonLinks())
    held = sysdb.task_get("held")
    assert held is not None and held.status is Status.CANCELLED and held.end_reason is EndReason.EXPIRED
    assert not sysdb.task_owned_by("held", "w1")


def test_a_revoke_ahead_of_the_task_keeps_it_from_running(sysdb: SystemDatabase) -> None:
    assert sysdb.task_revoke_ahead("early", "default")
    assert not sysdb.task_revoke_ahead("early", "default")  # the id is taken now
    [sent] = sysdb.tasks_enqueue([new("early")])
    assert sent.task_id == "early" and not sent.inserted
    assert claim(sysdb) == []
    early = sysdb.task_get("early")
    assert early is not None and early.status is Status.CANCELLED and early.name == "celery.revoked"
    sysdb.tasks_enqueue([new("sent")])
    assert not sysdb.task_revoke_ahead("sent", "default")  # a task has it: cancel it instead


def test_resume_clears_an_expiry_that_has_passed(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a", expires_at_epoch_ms=sysdb.now_ms() - 1)])
    assert sysdb.tasks_expire() == ["a"]
    assert sysdb.task_resume("a")
    assert sysdb.tasks_expire() == []
    a = sysdb.task_get("a")
    assert a is not None and a.status is Status.ENQUEUED and a.error is None and a.expires_at_epoch_ms is None


def test_relative_expiry_uses_the_database_clock(sysdb: SystemDatabase) -> None:
    before = sysdb.now_ms()
    sysdb.tasks_enqueue([new("a", expires_in_ms=3_600_000)])
    a = sysdb.task_get("a")
    assert a is not None and a.expires_at_epoch_ms is not None
    assert before + 3_600_000 <= a.expires_at_epoch_ms <= sysdb.now_ms() + 3_600_000


def test_end_reasons_say_why_a_task_ended_without_its_own_outcome(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue(
        [new("cancelled"), new("expired", expires_at_epoch_ms=sysdb.now_ms() - 1), new("ran")]
    )
    assert sysdb.task_cancel("cancelled") and sysdb.tasks_expire() == ["expired"]
    assert claim(sysdb) == ["ran"]
    assert sysdb.tasks_complete(CompleteParams("w1", (Outcome("ran", Status.ERROR, error="{}"),))) == ["ran"]
    reasons = {i: t.end_reason for i in ("cancelled", "expired", "ran") if (t := sysdb.task_get(i))}
    assert reasons == {"cancelled": EndReason.CANCELLED, "expired": EndReason.EXPIRED, "ran": None}
    # Resuming clears the reason; a fork starts without one.
    forked = sysdb.task_fork(ForkParams("expired", "expired-fork", start_step=1))
    assert forked.end_reason is None
    assert sysdb.task_resume("expired") and sysdb.task_resume("cancelled")
    assert [t.end_reason for t in sysdb.tasks_list(ListTasksParams(status=(Status.ENQUEUED,)))] == [None] * 3


def test_list_combines_filters_and_orders_both_ways(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b", queue="q2"), new("c"), new("d", queue="q2")])
    claim(sysdb, limit=1)
    oldest = ListTasksParams(status=(Status.ENQUEUED, Status.PENDING), queue_name="q2", newest_first=False)
    assert [t.task_id for t in sysdb.tasks_list(oldest)] == ["b", "d"]
    newest = ListTasksParams(
        status=(Status.ENQUEUED,), name="proj.add", created_before_epoch_ms=sysdb.now_ms() + 1
    )
    assert [t.task_id for t in sysdb.tasks_list(newest)] == ["d", "c", "b"]
    assert sysdb.tasks_list(ListTasksParams(status=(Status.SUCCESS,), queue_name="q2")) == []


def test_list_pages_by_keyset_and_filters_by_worker(sysdb: SystemDatabase) -> None:
    # Tasks in one insert share created_at: the key's second part (enqueue order) breaks ties.
    sysdb.tasks_enqueue([new(f"t{i}") for i in range(7)])
    for newest, order in ((True, [f"t{i}" for i in range(6, -1, -1)]), (False, [f"t{i}" for i in range(7)])):
        seen: list[str] = []
        key = None
        while True:
            page = sysdb.tasks_list(ListTasksParams(limit=3, newest_first=newest, after_key=key))
            if not page:
                break
            seen += [t.task_id for t in page]
            key = (page[-1].created_at, page[-1].enqueue_seq)
        assert seen == order
    assert claim(sysdb, executor="w9", limit=2) == ["t0", "t1"]
    mine = sysdb.tasks_list(ListTasksParams(executor_id="w9"))
    assert sorted(t.task_id for t in mine) == ["t0", "t1"]


def test_enqueue_in_chunks_is_one_all_or_nothing_insert(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    results = sysdb.tasks_enqueue_chunks(iter([[new("a"), new("b")], [new("c")]]))
    assert [(r.task_id, r.inserted) for r in results] == [("a", False), ("b", True), ("c", True)]
    with pytest.raises(RuntimeError, match="caller failed"):
        sysdb.tasks_enqueue_chunks(_chunks_then_failure([[new("x")], [new("y")]]))
    assert sysdb.task_get("x") is None and sysdb.task_get("y") is None


def _chunks_then_failure(chunks: list[list[NewTask]]) -> Iterator[list[NewTask]]:
    yield from chunks
    raise RuntimeError("the caller failed while preparing the next chunk")


def test_empty_bulk_enqueues_insert_nothing_and_do_not_fail(sysdb: SystemDatabase) -> None:
    # An empty group used to reach the bulk statement with no rows to bind (PostgreSQL:
    # "query parameter missing").
    assert sysdb.tasks_enqueue([]) == []
    assert sysdb.tasks_enqueue_chunks(iter([[], []])) == []
    assert sysdb.tasks_enqueue_chunks(iter([[], []]), new_ids=True) == []
    assert sysdb.tasks_enqueue_canvas(CanvasEnqueue(())) == []
    assert sysdb.tasks_list(ListTasksParams()) == []


def test_bulk_rows_keep_every_column_whatever_way_they_are_sent(sysdb: SystemDatabase) -> None:
    """One task setting every optional column beside tasks setting none, sent as one statement
    (arrays: a column no task sets goes as NULL) and as chunks (one transaction): each stored
    row holds what its task said, in the order sent."""
    now = sysdb.now_ms()

    def batch(prefix: str) -> list[NewTask]:
        full = new(
            f"{prefix}-full",
            priority=3,
            deduplication_id=f"{prefix}-d",
            partition_key="p",
            delay_ms=3_600_000,
            application_version="v9",
            max_recovery_attempts=4,
            parent_task_id=f"{prefix}-1",
            expires_in_ms=7_200_000,
            meta='{"m": 1}',
            retries=2,
        )
        return [new(f"{prefix}-1"), full, new(f"{prefix}-2", delay_until_epoch_ms=now + 3_600_000)]

    sysdb.tasks_enqueue(batch("one"))
    sysdb.tasks_enqueue_chunks(iter([batch("chunked")[:2], batch("chunked")[2:]]))
    for prefix in ("one", "chunked"):
        plain, full, eta = (sysdb.task_get(f"{prefix}-{s}") for s in ("1", "full", "2"))
        assert plain is not None and full is not None and eta is not None
        assert plain.status is Status.ENQUEUED and plain.delay_until_epoch_ms is None
        assert (plain.deduplication_id, plain.partition_key, plain.meta, plain.expires_at_epoch_ms) == (
            None,
            None,
            None,
            None,
        )
        assert full.status is Status.DELAYED and full.delay_until_epoch_ms is not None
        assert full.delay_until_epoch_ms >= now + 3_600_000
        assert full.expires_at_epoch_ms is not None and full.expires_at_epoch_ms >= now + 7_200_000
        assert (full.priority, full.deduplication_id, full.partition_key) == (3, f"{prefix}-d", "p")
        assert (full.application_version, full.max_recovery_attempts, full.retries) == ("v9", 4, 2)
        assert (full.parent_task_id, full.meta) == (f"{prefix}-1", '{"m": 1}')
        assert eta.status is Status.DELAYED and eta.delay_until_epoch_ms == now + 3_600_000
        assert plain.enqueue_seq < full.enqueue_seq < eta.enqueue_seq


def test_a_bulk_call_whose_tasks_share_every_option_stores_them_on_each_row(sysdb: SystemDatabase) -> None:
    """Tasks of one call with the same value in a column (PostgreSQL sends it once, not as an
    array): every row holds it; the ids and deduplication ids, which differ, each their own."""
    now = sysdb.now_ms()
    shared = {
        "priority": 3,
        "partition_key": "p",
        "delay_until_epoch_ms": now + 3_600_000,
        "application_version": "v9",
        "max_recovery_attempts": 4,
        "parent_task_id": "shared-parent",
        "expires_in_ms": 7_200_000,
        "meta": '{"m": 1}',
        "retries": 2,
    }
    tasks = [new(f"shared-{i}", "other", deduplication_id=f"d{i}", **shared) for i in range(3)]
    assert [r.inserted for r in sysdb.tasks_enqueue(tasks)] == [True, True, True]
    rows = [sysdb.task_get(f"shared-{i}") for i in range(3)]
    for i, row in enumerate(rows):
        assert row is not None and row.status is Status.DELAYED
        assert (row.queue_name, row.deduplication_id, row.delay_until_epoch_ms) == (
            "other",
            f"d{i}",
            now + 3_600_000,
        )
        assert (row.priority, row.partition_key, row.application_version) == (3, "p", "v9")
        assert (row.max_recovery_attempts, row.retries, row.parent_task_id) == (4, 2, "shared-parent")
        assert row.meta == '{"m": 1}' and row.expires_at_epoch_ms is not None
        assert row.expires_at_epoch_ms >= now + 7_200_000
    assert rows[0].enqueue_seq < rows[1].enqueue_seq < rows[2].enqueue_seq  # type: ignore[union-attr]
