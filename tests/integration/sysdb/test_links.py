"""Conformance of the system database, on PostgreSQL and SQLite: canvas links stored with a
canvas and resolved in the transaction of each parent's outcome (the engine-level canvas
suite is tests/integration/test_canvas_links.py)."""

from __future__ import annotations

import json

from pgtasks.sysdb import Status, SystemDatabase
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    ChordHeaderClose,
    CompleteParams,
    EndReason,
    LinkKind,
    Outcome,
    StoredOutcome,
    TaskLink,
)
from tests.integration.sysdb.support import JsonLinks, args_of, claim, task

LINKS = JsonLinks()


def finish(db: SystemDatabase, task_id: str, status: Status, output: str | None = None) -> None:
    record = db.task_get(task_id)
    assert record is not None and record.status is Status.PENDING
    outcome = Outcome(task_id, status, output, None if status is Status.SUCCESS else "{}", record.claim_token)
    outcome = Outcome(
        **{**{f: getattr(outcome, f) for f in outcome.__slots__}, "has_links": record.has_links}
    )
    assert db.tasks_complete(CompleteParams("w1", (outcome,), LINKS)) == [task_id]


def ended(db: SystemDatabase, task_id: str) -> tuple[Status, EndReason | None]:
    record = db.task_get(task_id)
    assert record is not None
    return record.status, record.end_reason


def test_a_canvas_is_stored_with_its_links_groups_and_meta(sysdb: SystemDatabase) -> None:
    results = sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("a", 1)._replace(meta='{"root_id": "a"}'), task("b", 2), task("g1"), task("g2")),
            waiting=frozenset({"b"}),
            links=(
                TaskLink("a", "b", LinkKind.CHAIN),
                TaskLink("grp", "g2", LinkKind.GROUP, position=1),
                TaskLink("grp", "g1", LinkKind.GROUP, position=0),
            ),
        )
    )
    assert [(r.task_id, r.inserted) for r in results] == [
        ("a", True),
        ("b", True),
        ("g1", True),
        ("g2", True),
    ]
    a, b = sysdb.task_get("a"), sysdb.task_get("b")
    assert a is not None and a.has_links and a.meta == '{"root_id": "a"}'
    assert b is not None and b.status is Status.WAITING and not b.has_links
    assert sysdb.group_members("grp") == ["g1", "g2"] and sysdb.group_members("none") == []
    assert sysdb.task_children("a") == ["b"] and sysdb.task_children("b") == []
    assert sysdb.task_children_many(["a", "b", "none"]) == {"a": ["b"], "b": [], "none": []}
    assert sysdb.task_children_many([]) == {}
    assert sysdb.task_get("g1").has_links is False  # type: ignore[union-attr]  # a group id is no task
    around = {
        (x.parent_id, x.child_id, x.kind, x.position, x.done) for x in sysdb.task_links_around("g2", 10)
    }
    assert around == {("grp", "g2", "group", 1, False)}
    assert [(x.parent_id, x.child_id, x.kind) for x in sysdb.task_links_around("a", 10)] == [
        ("a", "b", "chain")
    ]
    assert [x.kind for x in sysdb.task_links_around("b", 10)] == ["chain"]
    assert [x.child_id for x in sysdb.task_links_around("grp", 10)] == ["g1", "g2"]
    assert len(sysdb.task_links_around("grp", 1)) == 1 and sysdb.task_links_around("none", 10) == []


def test_success_activates_chain_and_chord_children_and_drops_errbacks(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("p1"), task("p2"), task("next", "own"), task("body"), task("eb")),
            waiting=frozenset({"next", "body", "eb"}),
            links=(
                TaskLink("p1", "next", LinkKind.CHAIN),
                TaskLink("p1", "eb", LinkKind.ERRBACK),
                TaskLink("p1", "body", LinkKind.CHORD, position=0),
                TaskLink("p2", "body", LinkKind.CHORD, position=1),
            ),
        )
    )
    assert claim(sysdb) == ["p1", "p2"]
    finish(sysdb, "p2", Status.SUCCESS, json.dumps("two"))
    assert ended(sysdb, "body") == (Status.WAITING, None)  # one chord parent still to come
    finish(sysdb, "p1", Status.SUCCESS, json.dumps("one"))
    assert args_of(sysdb, "next") == ["one", "own"] and args_of(sysdb, "body") == [["one", "two"]]
    assert ended(sysdb, "eb") == (Status.CANCELLED, EndReason.NOT_NEEDED)
    assert sorted(claim(sysdb)) == ["body", "next"]
    assert ended(sysdb, "next") == (Status.PENDING, None)


def test_failure_ends_dependants_and_starts_errbacks(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("p"), task("c1"), task("c2"), task("eb", "x")),
            waiting=frozenset({"c1", "c2", "eb"}),
            links=(
                TaskLink("p", "c1", LinkKind.CHAIN),
                TaskLink("c1", "c2", LinkKind.CHAIN),
                TaskLink("p", "eb", LinkKind.ERRBACK),
            ),
        )
    )
    assert claim(sysdb) == ["p"]
    finish(sysdb, "p", Status.ERROR)
    # The failure cascades down the chain: nothing waits forever.
    assert ended(sysdb, "c1") == (Status.ERROR, EndReason.DEPENDENCY_FAILED)
    assert ended(sysdb, "c2") == (Status.ERROR, EndReason.DEPENDENCY_FAILED)
    c1 = sysdb.task_get("c1")
    assert c1 is not None and json.loads(c1.error or "{}")["parent"] == "p"
    assert args_of(sysdb, "eb") == ["p", "x"] and claim(sysdb) == ["eb"]
    assert ended(sysdb, "p") == (Status.ERROR, None)  # its own outcome: no end reason


def test_a_stored_outcome_ends_the_task_and_resolves_its_links(sysdb: SystemDatabase) -> None:
    # Celery's backend.mark_as_done on a task others wait for: the chain goes on at once.
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue(
            (task("a", 1), task("b", 2), task("e")),
            waiting=frozenset({"b", "e"}),
            links=(TaskLink("a", "b", LinkKind.CHAIN), TaskLink("a", "e", LinkKind.ERRBACK)),
        )
    )
    assert not sysdb.task_store_outcome(StoredOutcome(task("a"), Status.SUCCESS, "40", None, LINKS))
    record = sysdb.task_get("a")
    assert record is not None and (record.status, record.output) == (Status.SUCCESS, "40")
    assert ended(sysdb, "b")[0] is Status.ENQUEUED and args_of(sysdb, "b") == [40, 2]
    assert ended(sysdb, "e") == (Status.CANCELLED, EndReason.NOT_NEEDED)


def test_a_stored_outcome_of_an_unknown_id_makes_a_row_no_worker_claims(sysdb: SystemDatabase) -> None:
    assert sysdb.task_store_outcome(StoredOutcome(task("x"), Status.WAITING))
    assert ended(sysdb, "x") == (Status.WAITING, None) and claim(sysdb) == []
    assert not sysdb.task_store_outcome(StoredOutcome(task("x"), Status.ERROR, None, '{"type": "E"}'))
    record = sysdb.task_get("x")
    assert record is not None and (record.status, record.error) == (Status.ERROR, '{"type": "E"}')
    assert sysdb.task_store_outcome(StoredOutcome(task("y"), Status.CANCELLED))
    assert ended(sysdb, "y")[0] is Status.CANCELLED


def test_a_chord_header_sent_task_by_task_starts_its_body_once_closed(sysdb: SystemDatabase) -> None:
    # The body waits on the group's open link until the header is closed, even when every
    # header task sent so far has succeeded.
    open_link = TaskLink("grp", "body", LinkKind.CHORD, position=-1)
    sysdb.tasks_enqueue_canvas(CanvasEnqueue((task("body"),), frozenset({"body"}), (open_link,)))
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue((task("h1"),), links=(TaskLink("h1", "body", LinkKind.CHORD, 0),))
    )
    assert claim(sysdb) == ["h1"]
    finish(sysdb, "h1", Status.SUCCESS, json.dumps(1))
    assert ended(sysdb, "body") == (Status.WAITING, None)
    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue((task("h2"),), links=(TaskLink("h2", "body", LinkKind.CHORD, 1),))
    )
    assert claim(sysdb) == ["h2"]
    assert sysdb.chord_header_close(ChordHeaderClose("grp", ("body",), LINKS)) == []  # h2 still runs
    assert ended(sysdb, "body") == (Status.WAITING, None)
    finish(sysdb, "h2", Status.SUCCESS, json.dumps(2))
    assert args_of(sysdb, "body") == [[1, 2]] and ended(sysdb, "body") == (Status.ENQUEUED, None)

    sysdb.tasks_enqueue_canvas(
        CanvasEnqueue((task("b2"),), frozenset({"b2"}), (TaskLink("g2", "b2", LinkKind.CHORD, -1),))
    )
    assert sysdb.chord_header_close(ChordHeaderClose("g2", ("b2",), LINKS)) == ["b2"]  # an empty header
    assert args_of(sysdb, "b2") == [[]]
    assert sysdb.chord_header_close(ChordHeaderClose("g2", ("b2",), LINKS)) == []  # closed once
