"""``self.request.chain`` and ``self.request.callbacks`` in a real worker, and clearing them to
stop what follows (Celery's idiom ``self.request.chain = None``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import chain
from celery.exceptions import TaskRevokedError

from tests.compat.apps import results_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    module, path = "tests.compat.apps.results_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "chains-w1"):
        yield path


def lines(ledger: Path, key: str) -> list[str]:
    text = ledger.read_text() if ledger.exists() else ""
    return [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith(key + " ")]


def test_request_chain_lists_the_steps_after_the_task_the_next_one_last(ledger: Path) -> None:
    flow = chain(proj.reads_chain.s(1), proj.add.s(2), proj.reads_chain.s(), proj.add.s(3))
    result = flow.apply_async()
    assert result.get(timeout=30) == 6
    first, third = lines(ledger, "chain-read")
    add_last, reads_third, add_second = result.id, result.parent.id, result.parent.parent.id
    assert first == f"add={add_last},reads_chain={reads_third},add={add_second}"
    assert third == f"add={add_last}"
    proj.reads_chain.delay(5).get(timeout=30)
    assert lines(ledger, "chain-read")[-1] == "-"  # no chain: None, as Celery's


def test_clearing_request_chain_stops_the_rest_of_the_chain(ledger: Path) -> None:
    flow = chain(proj.add.s(1, 1), proj.stops_chain.s(), proj.record.si("after-1"), proj.record.si("after-2"))
    result = flow.apply_async()
    stopper = result.parent.parent
    assert stopper.get(timeout=30) == 2 and stopper.state == "SUCCESS"
    assert lines(ledger, "chain-seen") == ["record,record"]
    for rest in (result.parent, result):  # never run; Celery never sends them (PENDING)
        wait_for(lambda r=rest: r.state == "REVOKED", timeout=30, what="the rest of the chain to end")
    with pytest.raises(TaskRevokedError):
        result.get(timeout=5)
    assert lines(ledger, "ran") == []


def test_clearing_request_callbacks_stops_the_links(ledger: Path) -> None:
    sent = proj.stops_callbacks.apply_async((7,), link=proj.record.si("linked"))
    assert sent.get(timeout=30) == 7
    assert lines(ledger, "callbacks-seen") == ["record"]
    (linked,) = sent.children or []
    wait_for(lambda: linked.state == "REVOKED", timeout=30, what="the callback to end")
    assert lines(ledger, "ran") == []
    kept = proj.add.apply_async((1, 2), link=proj.record.si("kept"))
    assert kept.get(timeout=30) == 3
    wait_for(lambda: lines(ledger, "ran") == ["kept"], timeout=30, what="an untouched callback to run")


def test_stopping_before_a_group_revokes_the_chord_without_failing_it(ledger: Path) -> None:
    from celery import group

    flow = chain(
        proj.stops_chain.s(1), group(proj.record.si("g1"), proj.record.si("g2")), proj.record.si("body")
    )
    body = flow.apply_async(link_error=proj.noted_errback.s())
    header = body.parent
    wait_for(lambda: body.state == "REVOKED", timeout=30, what="the chord's body to be revoked")
    # revoked one after the other, the farthest (the body) first: the members may follow it
    members = lambda: [member.state for member in header.results]  # noqa: E731
    wait_for(lambda: members() == ["REVOKED", "REVOKED"], timeout=30, what="the header revoked")
    assert lines(ledger, "ran") == [] and lines(ledger, "errback") == []  # no errback: nothing failed


def test_a_chain_cleared_before_a_retry_stays_stopped(ledger: Path) -> None:
    result = chain(proj.stops_chain_then_retries.s(3), proj.record.si("after")).apply_async()
    assert result.parent.get(timeout=30) == 3
    wait_for(lambda: result.state == "REVOKED", timeout=30, what="the rest of the chain to be revoked")
    assert lines(ledger, "ran") == []


def test_a_chain_handed_to_another_send_is_not_stopped(ledger: Path) -> None:
    result = chain(proj.forwards_chain.s(1), proj.record.si("next")).apply_async()
    assert result.get(timeout=30) == "next"  # pgtasks runs the rest after this task, as before
    wait_for(lambda: sorted(lines(ledger, "ran")) == ["forwarded", "next"], timeout=30, what="both to run")
