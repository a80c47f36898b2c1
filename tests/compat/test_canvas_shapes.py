"""Canvas shapes and their results as Celery gives them, with a real `pgtasks worker`: nested
groups unrolled into one list, a group of one in a chain is its task, a chain ending in a group
inside a group, chords inside chains with their parent links and root id, canvases from
generators, signatures whose fields are set, and workflows that travel as dicts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import chain, chord, group, signature
from celery.exceptions import IncompleteStream
from celery.result import GroupResult

from tests.compat.apps import canvas_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.canvas_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "shapes-w1", concurrency=4):
        yield path


def test_nested_groups_and_groups_in_chains(ledger: Path) -> None:
    nested = group(
        proj.add.si(1, 10), group(proj.add.si(1, 100), group(proj.add.si(1, 1000), proj.add.si(1, 2000)))
    )
    assert nested.delay().get(timeout=60) == [11, 101, 1001, 2001]
    inner = group(proj.add.s(1, 2) | group(proj.add.s(1), proj.add.s(2)))
    assert inner.delay().get(timeout=60) == [4, 5]
    single = chain(proj.add.s(1, 1), group(proj.add.s(1)), proj.mul.s(10)).delay()
    assert single.get(timeout=60) == 30  # a group of one is its task: no list passed on
    skipped = chain(proj.add.s(1, 1), group([]), proj.mul.s(10)).delay()
    assert skipped.get(timeout=60) == 20
    # A task object in a canvas stands for its signature, as in Celery.
    tail = chain(proj.tsum.s(), group(proj.add.s(8), proj.add.s(16)), proj.tsum.s() | proj.add.s(32))
    centred = chord([proj.add.s(0, 1)], chord([proj.tsum, proj.tsum], tail))
    assert centred.apply_async().get(timeout=60) == 60


def test_parents_and_root_id_through_a_chord_in_a_chain(ledger: Path) -> None:
    flow = chain(proj.add.s(1, 1), chord([proj.add.s(1), proj.add.s(2)], proj.tsum.s()), proj.mul.s(2))
    result = flow.delay()
    assert result.get(timeout=60) == 14
    body = result.parent
    header = body.parent
    assert body.get(timeout=10) == 7 and isinstance(header, GroupResult) and header.get(timeout=10) == [3, 4]
    first = header.parent
    assert first is not None and first.get(timeout=10) == 2 and first.parent is None
    fanned = chain(proj.add.s(1, 1), group(proj.whoami.s(), proj.whoami.s())).delay()
    answers = fanned.get(timeout=60)
    assert [a["root_id"] for a in answers] == [fanned.parent.id] * 2
    assert fanned.parent.get(timeout=10) == 2


def test_canvases_from_generators_and_settable_signatures(ledger: Path) -> None:
    assert chain(s for s in (proj.add.s(1, 1), proj.add.s(2))).delay().get(timeout=60) == 4
    assert group(proj.add.s(i, i) for i in range(3)).delay().get(timeout=60) == [0, 2, 4]
    sig = proj.add.s(1)
    sig.args = (2, 3)
    sig.kwargs = {}
    sig.options = {"priority": 3}
    assert sig.args == (2, 3) and sig.options == {"priority": 3}
    assert sig.delay().get(timeout=60) == 5


def test_workflows_that_travel_as_dicts_are_rebuilt(ledger: Path) -> None:
    flow = chord([proj.add.s(1, 1), proj.add.s(2, 2) | proj.mul.s(10)], proj.tsum.s())
    rebuilt = signature(json.loads(json.dumps(flow)))
    assert type(rebuilt) is type(flow) and type(rebuilt.header) is group
    assert isinstance(rebuilt.header.tasks[1], chain)
    assert rebuilt.delay().get(timeout=60) == 42
    assert [flow.subtask_type, flow.header.subtask_type, rebuilt["subtask_type"]] == [
        "chord",
        "group",
        "chord",
    ]
    assert (proj.add.s(1, 1) | proj.mul.s(2)).subtask_type == "chain" and proj.add.s().subtask_type is None

    # Celery's dict shapes (as Celery 5.7 writes them): a chord's header and body, chunks and
    # map by task and items
    def plain(name: str, *args: Any) -> dict[str, Any]:
        return {
            "task": name,
            "args": list(args),
            "kwargs": {},
            "options": {},
            "subtask_type": None,
            "immutable": False,
        }

    celery_chord = {
        "task": "celery.chord",
        "args": [],
        "kwargs": {
            "kwargs": {},
            "header": [plain(proj.add.name, 1, 1), plain(proj.add.name, 2, 2)],
            "body": plain(proj.tsum.name),
        },
        "options": {},
        "subtask_type": "chord",
        "immutable": False,
    }
    assert signature(celery_chord).delay().get(timeout=60) == 6
    celery_chunks = {
        "task": "celery.chunks",
        "args": [],
        "kwargs": {"task": plain(proj.add.name), "it": [[1, 2], [3, 4]], "n": 1},
        "options": {},
        "subtask_type": None,
        "immutable": True,
    }
    assert signature(celery_chunks).delay().get(timeout=60) == [[3], [7]]
    celery_map = {
        "task": "celery.map",
        "args": [],
        "kwargs": {"task": plain(proj.tsum.name), "it": [[1, 2], [3]]},
        "options": {},
        "subtask_type": None,
        "immutable": True,
    }
    assert signature(celery_map).delay().get(timeout=60) == [3, 3]
    # pgtasks' own map, starmap and chunks, after a trip through JSON
    for own, value in [
        (proj.tsum.map([[1, 2], [5]]), [3, 5]),
        (proj.add.starmap([(1, 2), (3, 4)]), [3, 7]),
        (proj.add.chunks([(1, 2), (3, 4), (5, 6)], 2), [[3, 7], [11]]),
    ]:
        travelled = signature(json.loads(json.dumps(own)))
        assert type(travelled) is type(own) and travelled.delay().get(timeout=60) == value


def test_a_generator_header_is_sent_task_by_task(ledger: Path) -> None:
    # As Celery (issue #3021): each header task is sent as the generator yields it, so the
    # first has run before the last is yielded; the body still gets every result, in order.
    size = 4

    def header() -> Iterator[Any]:
        for i in range(size):
            if i == size - 1:
                wait_for(lambda: "noted 0" in lines(ledger), timeout=60, what="the first header task")
            yield proj.record_int.s(i)

    flow = chord(header(), proj.tsum.s())
    result = flow()
    assert result.get(timeout=60) == size * (size - 1) // 2
    assert [r.get(timeout=10) for r in result.parent.results] == list(range(size))
    assert GroupResult.restore(result.parent.id, app=proj.app) is not None
    empty = chord((s for s in ()), proj.tsum.s()).delay()
    assert empty.get(timeout=60) == 0


def test_collect_and_iterdeps_walk_the_result_graph(ledger: Path) -> None:
    flow = chain(proj.add.s(1, 1), proj.add.s(2), proj.mul.s(10)).delay()
    assert flow.get(timeout=60) == 40
    first = flow.parent.parent
    assert [(r.id, value) for r, value in first.collect(timeout=10)] == [
        (first.id, 2),
        (flow.parent.id, 4),
        (flow.id, 40),
    ]
    assert [(p.id if p else None, r.id) for p, r in first.iterdeps()][1:] == [
        (first.id, flow.parent.id),
        (flow.parent.id, flow.id),
    ]
    waiting = chain(proj.add.s(1, 1).set(countdown=3600), proj.add.s(2)).delay()
    with pytest.raises(IncompleteStream):
        list(waiting.parent.iterdeps())
    assert [r.id for _, r in waiting.parent.iterdeps(intermediate=True)] == [waiting.parent.id]
    waiting.parent.revoke()
