"""Chains, chords and error callbacks resolved in the outcome's transaction, on PostgreSQL and
SQLite, through the same claim and completion calls a worker makes."""

from __future__ import annotations

import dataclasses
import json
import threading

from pgtasks.engine.canvas import CanvasLinks
from pgtasks.engine.errors import ChordError
from pgtasks.engine.failures import decode_exception, encode_exception
from pgtasks.engine.serialization import Codec
from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    ClaimParams,
    CompleteParams,
    LinkKind,
    NewTask,
    Outcome,
    TaskLink,
)

LINKS = CanvasLinks(Codec())


def task(task_id: str, *args: object) -> NewTask:
    inputs = json.dumps({"args": list(args), "kwargs": {"k": 1}})
    return NewTask(task_id=task_id, name="proj.t", inputs=inputs, queue_name="default")


def claim(db: SystemDatabase, executor: str = "w1") -> dict[str, list[object]]:
    """Claim what can run; the arguments of each claimed task."""
    claimed = db.tasks_claim(ClaimParams(executor, "v1", ("default",), 50))
    return {t.task_id: json.loads(t.inputs)["args"] for t in claimed}


def finish(db: SystemDatabase, task_id: str, result: object = None, error: Exception | None = None) -> None:
    record = db.task_get(task_id)
    assert record is not None and record.status is Status.PENDING
    outcome = (
        Outcome(task_id, Status.ERROR, error=encode_exception(error), claim_token=record.claim_token)
        if error is not None
        else Outcome(task_id, Status.SUCCESS, json.dumps(result), claim_token=record.claim_token)
    )
    outcome = dataclasses.replace(outcome, has_links=record.has_links)
    assert db.tasks_complete(CompleteParams(record.executor_id or "w1", (outcome,), LINKS)) == [task_id]


def status(db: SystemDatabase, task_id: str) -> Status:
    record = db.task_get(task_id)
    assert record is not None
    return record.status


def chain_of_three(db: SystemDatabase) -> None:
    db.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("a", 1)._replace(meta='{"root_id": "a"}'), task("b", 2), task("c", 3)),
            waiting=frozenset({"b", "c"}),
            links=(TaskLink("a", "b", LinkKind.CHAIN), TaskLink("b", "c", LinkKind.CHAIN, prepend=False)),
        )
    )


def test_a_chain_passes_each_result_on_and_runs_in_order(sysdb: SystemDatabase) -> None:
    chain_of_three(sysdb)
    assert [status(sysdb, i) for i in "abc"] == [Status.ENQUEUED, Status.WAITING, Status.WAITING]
    assert sysdb.task_get("a").has_links and sysdb.task_get("a").meta == '{"root_id": "a"}'  # type: ignore[union-attr]
    assert claim(sysdb) == {"a": [1]}  # WAITING tasks are never claimed
    finish(sysdb, "a", {"x": [1, 2]})
    assert claim(sysdb) == {"b": [{"x": [1, 2]}, 2]}  # the result goes first
    finish(sysdb, "b", 7)
    assert claim(sysdb) == {"c": [3]}  # immutable: its own arguments only
    finish(sysdb, "c", "done")
    assert sysdb.task_children("a") == ["b"] and sysdb.task_children("c") == []


def test_a_failure_stops_the_chain_and_the_rest_carry_the_error(sysdb: SystemDatabase) -> None:
    chain_of_three(sysdb)
    claim(sysdb)
    finish(sysdb, "a", error=ValueError("bad input"))
    for task_id in "bc":
        record = sysdb.task_get(task_id)
        assert record is not None and record.status is Status.ERROR and record.error is not None
        raised = decode_exception(record.error)
        assert isinstance(raised, ValueError) and str(raised) == "bad input"
    assert claim(sysdb) == {}


def chord_of(db: SystemDatabase, size: int) -> list[str]:
    headers = [f"h{n}" for n in range(size)]
    db.tasks_enqueue_canvas(
        CanvasEnqueue(
            (*(task(h, n) for n, h in enumerate(headers)), task("body", "extra")),
            waiting=frozenset({"body"}),
            links=tuple(TaskLink(h, "body", LinkKind.CHORD, position=n) for n, h in enumerate(headers)),
        )
    )
    return headers


def test_a_chord_body_runs_once_with_every_result_in_header_order(sysdb: SystemDatabase) -> None:
    headers = chord_of(sysdb, 3)
    assert set(claim(sysdb)) == set(headers)
    for n in (2, 0):
        finish(sysdb, headers[n], n * 10)
        assert status(sysdb, "body") is Status.WAITING
    finish(sysdb, headers[1], 10)
    assert claim(sysdb) == {"body": [[0, 10, 20], "extra"]}


def test_racing_chord_headers_release_the_body_exactly_once(database_url: str, sysdb: SystemDatabase) -> None:
    from pgtasks.sysdb import open_system_database

    headers = chord_of(sysdb, 6)
    claim(sysdb)
    barrier = threading.Barrier(len(headers))

    def end(n: int) -> None:
        db = open_system_database(database_url)
        try:
            barrier.wait()
            finish(db, headers[n], n)
        finally:
            db.close()

    threads = [threading.Thread(target=end, args=(n,)) for n in range(len(headers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(status(sysdb, h) is Status.SUCCESS for h in headers)
    assert claim(sysdb) == {"body": [[0, 1, 2, 3, 4, 5], "extra"]}


def test_a_header_failure_fails_the_body_with_chord_error(sysdb: SystemDatabase) -> None:
    headers = chord_of(sysdb, 2)
    claim(sysdb)
    finish(sysdb, headers[0], 1)
    finish(sysdb, headers[1], error=KeyError("gone"))
    record = sysdb.task_get("body")
    assert record is not None and record.status is Status.ERROR and record.error is not None
    raised = decode_exception(record.error)
    # Celery's text: the failed header task's exception as repr() shows it
    assert (
        isinstance(raised, ChordError) and str(raised) == f"Dependency {headers[1]} raised KeyError('gone')"
    )


def test_error_callbacks_run_on_failure_and_are_cancelled_on_success(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("ok"), task("bad"), task("eb-ok", "x"), task("eb-bad", "x")),
            waiting=frozenset({"eb-ok", "eb-bad"}),
            links=(TaskLink("ok", "eb-ok", LinkKind.ERRBACK), TaskLink("bad", "eb-bad", LinkKind.ERRBACK)),
        )
    )
    claim(sysdb)
    finish(sysdb, "ok", 1)
    finish(sysdb, "bad", error=RuntimeError("boom"))
    assert status(sysdb, "eb-ok") is Status.CANCELLED
    assert claim(sysdb) == {"eb-bad": ["bad", "x"]}


def test_a_retried_or_released_parent_does_not_resolve_its_links(sysdb: SystemDatabase) -> None:
    chain_of_three(sysdb)
    claim(sysdb)
    record = sysdb.task_get("a")
    assert record is not None
    token = record.claim_token
    retry = Outcome("a", Status.ERROR, error="{}", claim_token=token, retry_in_ms=0, has_links=True)
    assert sysdb.tasks_complete(CompleteParams("w1", (retry,), LINKS)) == ["a"]
    assert status(sysdb, "b") is Status.WAITING and claim(sysdb) == {"a": [1]}
    finish(sysdb, "a", 5)
    assert claim(sysdb) == {"b": [5, 2]}


def test_a_revoked_waiting_task_is_skipped_and_groups_can_be_saved(sysdb: SystemDatabase) -> None:
    chain_of_three(sysdb)
    assert sysdb.task_cancel("b")
    claim(sysdb)
    finish(sysdb, "a", 1)
    assert status(sysdb, "b") is Status.CANCELLED and status(sysdb, "c") is Status.WAITING
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("g1"), task("g2")),
            links=(TaskLink("grp", "g2", LinkKind.GROUP, 1), TaskLink("grp", "g1", LinkKind.GROUP, 0)),
        )
    )
    assert sysdb.group_members("grp") == ["g1", "g2"] and sysdb.group_members("nope") == []
    assert not sysdb.task_get("g1").has_links  # type: ignore[union-attr]
