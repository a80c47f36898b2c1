"""Celery's ``Task.replace`` with a real `pgtasks worker`: a task replaced by a task, chain,
group or chord ends with its replacement's result (a group's as one list), and whatever
waited for it (the rest of its chain, its chord, its callbacks and errbacks) follows from
there, exactly once; ``on_replace`` is called; eagerly, replace returns the result."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import chain, chord, group
from celery.exceptions import ImproperlyConfigured
from celery.result import AsyncResult

from tests.compat.apps import replace_app as proj
from tests.support.celery_worker import celery_app_on, celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.replace_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "replace-w1", concurrency=4):
        yield path


def test_replaced_by_a_task_chain_group_or_chord(ledger: Path) -> None:
    single = proj.replace_with.delay(proj.add.s(1, 2))
    assert single.get(timeout=60) == 3 and single.state == "SUCCESS"
    assert proj.replace_with.delay(proj.add.s(1, 1) | proj.mul.s(10)).get(timeout=60) == 20
    assert proj.replace_with.delay(group(proj.add.s(1, 1), proj.add.s(2, 2))).get(timeout=60) == [2, 4]
    flow = chord([proj.add.s(1, 1), proj.add.s(2, 2)], proj.tsum.s())
    assert proj.replace_with.delay(flow).get(timeout=60) == 6
    assert proj.replace_with.delay(group([])).get(timeout=60) == []
    with pytest.raises(ImproperlyConfigured, match="empty chain"):
        proj.replace_with.delay(chain()).get(timeout=60)
    assert f"on_replace {single.id} {proj.add.name}" in lines(ledger)


def test_the_chain_chord_and_callbacks_of_a_replaced_task_follow_its_replacement(ledger: Path) -> None:
    flow = (proj.add.s(1, 1) | proj.replace_by_add.s() | proj.mul.s(2)).delay()
    assert flow.get(timeout=60) == 204
    assert flow.parent.get(timeout=10) == 102 and flow.parent.parent.get(timeout=10) == 2
    body = chord([proj.replace_by_add.s(1), proj.add.s(2, 2)], proj.tsum.s()).delay()
    assert body.get(timeout=60) == 105
    nested = chord([proj.add.s(1, 1), proj.add.s(2, 2)], proj.replace_by_sum.s()).delay()
    assert nested.get(timeout=60) == 7

    fine = proj.replace_by_add.apply_async((5,), link=proj.record.s("replaced"), link_error=proj.on_error.s())
    assert fine.get(timeout=60) == 105
    failing = proj.replace_by_fail.apply_async(
        (7,), link=proj.record.s("never"), link_error=[proj.on_error.s(), proj.error_handler.s()]
    )
    with pytest.raises(proj.Broken, match=r"failed with \[7\]"):
        failing.get(timeout=60)
    assert AsyncResult(failing.id).state == "FAILURE"
    wait_for(lambda: f"errback {failing.id}" in lines(ledger), timeout=60, what="the old-style errback")
    wait_for(lambda: "callback replaced 105" in lines(ledger), timeout=60, what="the callback")
    wait_for(
        lambda: any(line.startswith("handler ") for line in lines(ledger)), timeout=60, what="the handler"
    )
    entries = lines(ledger)
    assert entries.count(f"errback {failing.id}") == 1 and entries.count("callback replaced 105") == 1
    assert [line.split()[-1] for line in entries if line.startswith("handler ")] == ["Broken"]
    assert not any(line.startswith("callback never") for line in entries)
    assert f"errback {fine.id}" not in entries


def test_errbacks_called_in_the_worker_move_to_a_chain_or_group_replacement(ledger: Path) -> None:
    """A ``(request, exc, traceback)`` errback of a replaced task runs once, in the worker of
    the replacement's task that fails, whatever the replacement's shape."""
    by_chain = proj.replace_by_failing_chain.apply_async((7,), link_error=proj.error_handler.s())
    with pytest.raises(proj.Broken, match=r"failed with \[8\]"):
        by_chain.get(timeout=60)
    by_group = proj.replace_by_failing_group.apply_async((5,), link_error=proj.error_handler.s())
    with pytest.raises(Exception, match=r"failed with \[5\]"):
        by_group.get(timeout=60)
    assert AsyncResult(by_chain.id).state == "FAILURE" and AsyncResult(by_group.id).state == "FAILURE"

    def handlers() -> list[str]:
        return [line for line in lines(ledger) if line.startswith("handler ")]

    wait_for(lambda: len(handlers()) >= 2, timeout=60, what="both handlers")
    called = {line.split()[2]: line.split()[1] for line in handlers()}
    assert len(handlers()) == 2 and set(called) == {"Broken", "ChordError"}
    # Called with the request of the replacement's task that failed, not the replaced one: in
    # a chain, the task that raised; a group is a chord whose body (celery.accumulate) gets
    # the errback, as Celery links a chord's errbacks.
    assert AsyncResult(called["Broken"]).name == proj.fail.name
    assert AsyncResult(called["ChordError"]).name == "celery.accumulate"


def test_a_replaced_task_lists_its_replacement_as_its_child(ledger: Path) -> None:
    single = proj.replace_by_add.delay(5)
    assert single.get(timeout=60) == 105
    children = AsyncResult(single.id).children
    assert children is not None and len(children) == 1
    (child,) = children
    assert child.id != single.id and child.name == proj.add.name and child.get(timeout=10) == 105
    assert child.parent is not None and child.parent.id == single.id
    flow = proj.replace_with.delay(proj.add.s(1, 1) | proj.mul.s(10))
    assert flow.get(timeout=60) == 20
    (first,) = AsyncResult(flow.id).children or []
    assert first.name == proj.add.name and first.get(timeout=10) == 2
    # The chain's first task hands its result to the second: the graph goes on from there.
    (second,) = first.children or []
    assert second.name == proj.mul.name and second.get(timeout=10) == 20
    assert [value for _, value in AsyncResult(flow.id).collect(timeout=10)] == [20, 2, 20]


def test_replace_in_eager_mode_returns_the_result(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with celery_app_on(proj.app, database_url, tmp_path / "ledger", monkeypatch):
        proj.app.conf.task_always_eager = True
        try:
            assert proj.replace_by_add.delay(5).get() == 105
            assert proj.replace_with.apply((proj.add.s(1, 1) | proj.mul.s(3),)).get() == 6
        finally:
            proj.app.conf.task_always_eager = False
