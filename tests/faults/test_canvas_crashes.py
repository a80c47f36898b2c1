"""SIGKILL at the claim and outcome crash points while a chain and a chord run.

A link of a chain, or a chord's body, is started by the outcome of the task before it, in
the same transaction, not by an enqueue. A worker that dies just before that outcome, or
just after it commits, must leave the workflow to finish once: every task ends in exactly
one terminal state, the next link starts once, and the results are those of a clean run.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks.compat import install

install()  # the app under test imports ``celery``: pgtasks' names

from celery import chord  # noqa: E402

from pgtasks.sysdb.records import ListTasksParams  # noqa: E402
from tests.compat.apps import canvas_app as proj  # noqa: E402
from tests.faults.invariants import check, given_back, install_history, unfinished  # noqa: E402
from tests.support.celery_worker import celery_app_on  # noqa: E402
from tests.support.inprocess import wait_for  # noqa: E402
from tests.support.processes import stop, worker_process  # noqa: E402

APP = "tests.compat.apps.canvas_app"
POINTS = ("after_claim_commit", "before_outcome", "after_outcome_commit")


@pytest.fixture
def url(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    install_history(pg_url)
    proj.app.conf.task_always_eager = False
    with celery_app_on(proj.app, pg_url, tmp_path / "ledger", monkeypatch):
        yield pg_url


@pytest.mark.parametrize("point", POINTS)
def test_a_worker_killed_between_links_leaves_the_workflow_to_finish_once(
    url: str, tmp_path: Path, point: str
) -> None:
    flow = (proj.add.s(2, 2) | proj.mul.s(10) | proj.add.s(1)).delay()
    body = chord([proj.add.s(i, i) for i in range(4)], proj.tsum.s()).apply_async()
    ids = [flow.id, flow.parent.id, flow.parent.parent.id, body.id, *(r.id for r in body.parent.results)]
    ledger = tmp_path / "ledger"
    crashing = worker_process(url, ledger, "w1", app=APP, crashpoint=point, concurrency=1)
    rescuer = None
    try:
        assert crashing.wait(timeout=60) == -signal.SIGKILL
        assert unfinished(url, ids)  # it died with work left
        rescuer = worker_process(url, ledger, "w2", app=APP, concurrency=2)
        wait_for(lambda: not unfinished(url, ids), timeout=60, what="the workflows to finish")
    finally:
        for process in (crashing, rescuer):
            if process is not None:
                stop(process, signal.SIGKILL)
    assert flow.get(timeout=5) == 41 and flow.parent.get(timeout=5) == 40
    assert body.get(timeout=5) == 12
    # The dead worker's tasks went back once each: with concurrency 1 it holds one running
    # task, and at the outcome points also those whose outcomes waited for their batch.
    # After an outcome commit that task is done: the worker may have held no other.
    returned = given_back(url)
    assert len(set(returned)) == len(returned) and (returned or point == "after_outcome_commit")
    report = check(url, ids, faulted_ids=returned, ledger=None)
    assert report.statuses == {"SUCCESS": len(ids)}
    assert report.max_attempts == (2 if returned else 1)


REPLACE_APP = "tests.compat.apps.replace_app"


@pytest.mark.parametrize(
    "point",
    [
        "after_claim_commit:task_id={replaced}",
        "after_replace_commit",
        "before_outcome",
        "after_outcome_commit",
    ],
)
def test_a_worker_killed_around_a_replace_or_in_nested_chords_leaves_them_to_finish_once(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    from tests.compat.apps import replace_app as rep

    install_history(pg_url)
    rep.app.conf.task_always_eager = False
    ledger = tmp_path / "ledger"
    with celery_app_on(rep.app, pg_url, ledger, monkeypatch):
        flow = (rep.add.s(1, 1) | rep.replace_by_add.s() | rep.mul.s(2)).delay()
        nested = chord(
            [chord([rep.add.s(1, 1), rep.add.s(2, 2)], rep.tsum.s()), rep.add.s(3, 3)], rep.tsum.s()
        )
        body = nested.delay()
        ids = [flow.id, flow.parent.id, flow.parent.parent.id, body.id]
        crashing = worker_process(
            pg_url,
            ledger,
            "w1",
            app=REPLACE_APP,
            crashpoint=point.format(replaced=flow.parent.id),
            concurrency=1,
        )
        rescuer = None
        try:
            assert crashing.wait(timeout=60) == -signal.SIGKILL
            assert unfinished(pg_url, ids)
            rescuer = worker_process(pg_url, ledger, "w2", app=REPLACE_APP, concurrency=2)
            wait_for(lambda: not unfinished(pg_url, ids), timeout=60, what="the workflows to finish")
        finally:
            for process in (crashing, rescuer):
                if process is not None:
                    stop(process, signal.SIGKILL)
        assert flow.get(timeout=5) == 204 and flow.parent.get(timeout=5) == 102
        assert body.get(timeout=5) == 12
        everything = [t.task_id for t in rep.app.engine.admin.tasks(ListTasksParams(limit=1000))]
        returned = given_back(pg_url)
        assert len(set(returned)) == len(returned)
        if point == "after_replace_commit":  # the replaced task waits for its replacement: not re-run
            assert flow.parent.id not in returned
        report = check(pg_url, everything, faulted_ids=returned, ledger=None)
        assert report.statuses == {"SUCCESS": len(everything)}
        # The replacement ran once: one add(2, 100) task, whatever the crash.
        adds = [t for t in rep.app.engine.admin.tasks(ListTasksParams(limit=1000)) if t.name == rep.add.name]
        assert len(adds) == 5  # add(1, 1), the replacement, and the three of the chords


@pytest.mark.parametrize("point", ["after_claim_commit:task_id={replaced}", "after_replace_commit"])
def test_a_worker_killed_around_a_replace_by_a_failing_chain_calls_its_errback_once(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """The replaced task's ``(request, exc, traceback)`` errback moved to its chain replacement:
    whatever the crash around the replace, the chain fails once and the errback runs once."""
    from tests.compat.apps import replace_app as rep

    install_history(pg_url)
    rep.app.conf.task_always_eager = False
    ledger = tmp_path / "ledger"
    with celery_app_on(rep.app, pg_url, ledger, monkeypatch):
        replaced = rep.replace_by_failing_chain.apply_async((7,), link_error=rep.error_handler.s())
        crashing = worker_process(
            pg_url,
            ledger,
            "w1",
            app=REPLACE_APP,
            crashpoint=point.format(replaced=replaced.id),
            concurrency=1,
        )
        rescuer = None
        try:
            assert crashing.wait(timeout=60) == -signal.SIGKILL
            assert unfinished(pg_url, [replaced.id])
            rescuer = worker_process(pg_url, ledger, "w2", app=REPLACE_APP, concurrency=2)
            wait_for(
                lambda: not unfinished(pg_url, [replaced.id]), timeout=60, what="the replaced task to end"
            )
            wait_for(
                lambda: any(line.startswith("handler ") for line in ledger.read_text().splitlines()),
                timeout=60,
                what="the errback",
            )
        finally:
            for process in (crashing, rescuer):
                if process is not None:
                    stop(process, signal.SIGKILL)
        with pytest.raises(rep.Broken, match=r"failed with \[8\]"):
            replaced.get(timeout=5)
        handlers = [line for line in ledger.read_text().splitlines() if line.startswith("handler ")]
        assert len(handlers) == 1 and handlers[0].endswith(" Broken")
        fails = [
            t for t in rep.app.engine.admin.tasks(ListTasksParams(limit=1000)) if t.name == rep.fail.name
        ]
        assert len(fails) == 1  # the replacement was inserted once
