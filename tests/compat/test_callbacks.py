"""Callbacks and errbacks on every signature type, as Celery documents them (Canvas: "Callbacks",
"Error handling"), with a real `pgtasks worker`, each called exactly once:

- a group's ``link`` runs (immutable) after its first task, its ``link_error`` (immutable) for
  each task that fails;
- a chain's ``link`` runs with its result, its ``link_error`` once whichever task fails;
- a chord's ``link`` runs with the body's result, its ``link_error`` when the body or a header
  task fails;
- in both of Celery's errback styles (sent with the failed id; called with request, exc,
  traceback), and through ``apply(link=, link_error=)`` in eager mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import chord, group
from celery.exceptions import ChordError
from celery.result import AsyncResult

from tests.compat.apps import replace_app as proj
from tests.support.celery_worker import celery_app_on, celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.replace_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "callbacks-w1", concurrency=4):
        yield path


def once(ledger: Path, line: str) -> None:
    wait_for(lambda: line in lines(ledger), timeout=60, what=line)
    assert lines(ledger).count(line) == 1, lines(ledger)


def test_group_callbacks_and_errbacks(ledger: Path) -> None:
    members = group(proj.add.s(1, 1), proj.add.s(2, 2))
    members.link(proj.record.s("x", "group-done"))
    assert members.delay().get(timeout=60) == [2, 4]
    once(ledger, "callback group-done x")

    failing = group(proj.add.s(1, 1), proj.fail.s("g"))
    failing.link_error(proj.on_error.si("group-failed"))  # one argument: sent as a task
    failing.link_error(proj.error_handler.s())
    result = failing.delay()
    with pytest.raises(proj.Broken):
        result.get(timeout=60)
    once(ledger, "errback group-failed")
    once(ledger, f"handler {result.results[1].id} Broken")


def test_chain_callbacks_and_errbacks(ledger: Path) -> None:
    flow = proj.add.s(1, 1) | proj.mul.s(3)
    flow.link(proj.record.s("chain-done"))
    assert flow.delay().get(timeout=60) == 6
    once(ledger, "callback chain-done 6")

    broken = proj.add.s(1, 1) | proj.fail.s() | proj.add.s(1)
    result = broken.apply_async(link_error=[proj.on_error.s(), proj.error_handler.s()])
    with pytest.raises(proj.Broken):
        result.get(timeout=60)
    # As Celery: linked to every task of the chain, called by the one that failed.
    once(ledger, f"errback {result.parent.id}")
    once(ledger, f"handler {result.parent.id} Broken")  # in the worker of the task that failed


def test_chord_callbacks_and_errbacks_when_the_header_or_the_body_fails(ledger: Path) -> None:
    fine = chord([proj.add.s(1, 1), proj.add.s(2, 2)], proj.tsum.s())
    fine.link(proj.record.s("chord-done"))
    fine.link_error(proj.on_error.s())
    done = fine.delay()
    assert done.get(timeout=60) == 6
    once(ledger, "callback chord-done 6")

    header = chord([proj.add.s(1, 1), proj.fail.s("h")], proj.tsum.s())
    header.link_error(proj.on_error.s())
    header.link_error(proj.error_handler.s())
    body = header.delay()
    with pytest.raises(proj.Broken):  # get() raises the failed parent's error first
        body.get(timeout=60)
    with pytest.raises(ChordError):
        AsyncResult(body.id).get(timeout=60)
    # As Celery: the chord's errbacks are the body's, called once with its id (request).
    once(ledger, f"errback {body.id}")
    once(ledger, f"handler {body.id} ChordError")

    failing_body = chord([proj.add.s(1, 1)], proj.fail.s()).apply_async(link_error=proj.on_error.s())
    with pytest.raises(proj.Broken):
        failing_body.get(timeout=60)
    once(ledger, f"errback {failing_body.id}")
    assert f"errback {done.id}" not in lines(ledger)


def effects(path: Path) -> list[str]:
    """The ledger lines of callbacks and errbacks (other test apps' signal receivers, still
    connected in this process, write theirs too)."""
    return [line for line in lines(path) if line.split()[0] in ("callback", "errback", "handler")]


def test_apply_with_callbacks_and_errbacks(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger"
    with celery_app_on(proj.app, database_url, path, monkeypatch):
        proj.app.conf.task_always_eager = True
        try:
            assert proj.add.apply((1, 2), link=proj.record.s("eager")).get() == 3
            assert effects(path) == ["callback eager 3"]
            failed = proj.fail.apply(("e",), link_error=[proj.on_error.s(), proj.error_handler.s()])
            assert failed.state == "FAILURE" and isinstance(failed.result, proj.Broken)
            assert sorted(effects(path)[1:]) == [f"errback {failed.id}", f"handler {failed.id} Broken"]
            flow = group(proj.add.s(1, 1), proj.add.s(2, 2))
            flow.link(proj.record.si("y", "eager-group"))
            assert flow.apply().get() == [2, 4] and effects(path)[-1] == "callback eager-group y"
        finally:
            proj.app.conf.task_always_eager = False


def test_apply_sends_callbacks_when_not_eager(ledger: Path) -> None:
    # Celery's apply() runs the task here but sends its callbacks to the workers.
    assert proj.add.apply((2, 3), link=proj.record.s("sent")).get() == 5
    once(ledger, "callback sent 5")
