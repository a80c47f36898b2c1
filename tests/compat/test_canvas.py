"""Celery's canvas run by a real `pgtasks worker`: chains pass results on and stop at the first
failure, groups join, chords run their body once with every result, callbacks and errbacks,
map/starmap/chunks; and the same workflows in eager mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import chain, chord, group
from celery.exceptions import ChordError
from celery.result import AsyncResult, GroupResult

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.records import Status
from tests.compat.apps import canvas_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines
from tests.support.processes import stop, worker_process


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A worker of canvas_app; the ledger its tasks (and this process's) append to."""
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.canvas_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "canvas-w1", concurrency=4):
        yield path


def test_chains_groups_and_chords(ledger: Path) -> None:
    flow = proj.add.s(2, 2) | proj.mul.s(10) | proj.add.si(1, 1)
    result = flow.delay()
    assert result.get(timeout=60) == 2
    assert result.parent.get(timeout=10) == 40 and result.parent.parent.get(timeout=10) == 4
    assert [c.id for c in result.parent.parent.children] == [result.parent.id]

    same = chain(proj.add.s(1), proj.mul.s(3)).apply_async((4,))  # partial: 4 goes first
    assert same.get(timeout=60) == 15

    members = group(proj.add.s(i, i) for i in range(5)).apply_async()
    assert isinstance(members, GroupResult) and len(members) == 5
    assert members.get(timeout=60) == [0, 2, 4, 6, 8] and members.completed_count() == 5
    restored = GroupResult.restore(members.id, app=proj.app)
    assert restored is not None and [r.id for r in restored.results] == [r.id for r in members.results]

    total = chord((proj.add.s(i, i) for i in range(10)), proj.tsum.s()).apply_async()
    assert total.get(timeout=60) == 90
    assert chord([proj.mul.s(2, 3), proj.mul.s(4, 5)])(proj.tsum.s()).get(timeout=60) == 26
    implicit = (group(proj.add.s(1, 1), proj.add.s(2, 2)) | proj.tsum.s()).delay()
    assert implicit.get(timeout=60) == 6
    assert chord([], proj.tsum.s()).apply_async().get(timeout=60) == 0  # an empty header: []

    # freeze(): the ids known before the send are the ids sent
    flow = proj.add.s(1, 1) | proj.mul.s(3)
    known = flow.freeze()
    sent = flow.delay()
    assert sent.id == known.id and sent.parent.id == known.parent.id
    assert AsyncResult(known.id, app=proj.app).get(timeout=60) == 6
    fan = group(proj.add.s(1, 1), proj.add.s(2, 2))
    fan_known = fan.freeze()
    fan_sent = fan.apply_async()
    assert isinstance(fan_known, GroupResult) and fan_sent.id == fan_known.id
    assert [r.id for r in fan_sent.results] == [r.id for r in fan_known.results]
    assert fan_known.get(timeout=60) == [2, 4]
    sums = chord([proj.add.s(1, 1), proj.add.s(2, 2)], proj.tsum.s())
    sums_known = sums.freeze()
    assert sums.apply_async().id == sums_known.id and sums_known.get(timeout=60) == 6
    assert sums_known.parent.id == sums.header.options["task_id"]


def test_freezing_a_chain_sets_its_id() -> None:
    """As Celery's chain.freeze(_id): the chain's own id becomes the id given for its last task
    (Celery's t/integration test_freezing_chain_sets_id_of_last_task), None without one."""
    last = proj.add.s(2).set(task_id="42")
    flow = proj.add.s(4) | last
    assert flow.id is None
    assert flow.freeze(last.id).id == "42" and flow.id == "42"
    flow.freeze()
    assert flow.id is None and flow.tasks[-1].id == "42"


def test_chain_and_chord_are_celerys_private_classes_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """``celery.canvas._chain`` and ``_chord`` are the classes of chain and chord instances:
    projects test ``isinstance(flow, _chain)`` and patch ``_chain.apply_async`` so that their
    tests send nothing (celery-director's conftest); the import was an ImportError."""
    from celery.canvas import _chain, _chord

    flow = proj.add.s(1, 1) | proj.mul.s(2)
    assert isinstance(flow, _chain) and isinstance(chord([proj.add.s(1, 1)], proj.tsum.s()), _chord)
    monkeypatch.setattr(_chain, "apply_async", lambda *args, **kwargs: None)
    assert flow.apply_async() is None and flow.delay() is None


def test_failures_stop_chains_fail_chords_and_run_errbacks(ledger: Path) -> None:
    stopped = (proj.add.s(1, 1) | proj.fail.s() | proj.add.s(5)).delay()
    with pytest.raises(proj.Broken, match=r"failed with \[2\]"):
        stopped.get(timeout=60)
    assert stopped.state == "FAILURE"  # Celery would leave it PENDING forever

    body = chord([proj.add.s(1, 1), proj.fail.s("h")], proj.tsum.s()).apply_async()
    with pytest.raises(proj.Broken):  # as Celery: get() raises a failed parent's error first
        body.get(timeout=60)
    with pytest.raises(ChordError, match=r"^Dependency \S+ raised Broken\(\"failed with \['h'\]\"\)$"):
        AsyncResult(body.id).get(timeout=60)

    failing = proj.fail.apply_async(("x",), link_error=[proj.on_error.s(), proj.error_handler.s()])
    with pytest.raises(proj.Broken):
        failing.get(timeout=60)
    fine = proj.add.apply_async((1, 2), link=proj.record.s("ok"), link_error=proj.on_error.s())
    assert fine.get(timeout=60) == 3
    wait_for(lambda: f"errback {failing.id}" in lines(ledger), timeout=60, what="the errback task")
    assert f"handler {failing.id} Broken tb" in lines(ledger)  # ran in the worker, before the outcome
    wait_for(lambda: "callback ok 3" in lines(ledger), timeout=60, what="the callback")
    assert f"errback {fine.id}" not in lines(ledger)


def test_headers_options_and_root_id_reach_the_request(ledger: Path) -> None:
    alone = proj.whoami.apply_async((1,), headers={"tenant": "acme"})
    expected = {"root_id": alone.id, "headers": {"tenant": "acme"}, "tenant": "acme", "args": [1]}
    assert alone.get(timeout=60) == expected
    flow = (proj.add.s(1, 1) | proj.whoami.s()).delay()
    assert flow.get(timeout=60) == {"root_id": flow.parent.id, "headers": None, "args": [2]}
    # An option neither pgtasks nor Celery knows is a message property, as in Celery (libraries
    # such as django-celery-beat and celery-once send their own); a typo of a known one is not.
    sent = proj.whoami.apply_async((3,), x_origin="beat", x_once={"graceful": True})
    assert sent.get(timeout=60)["properties"] == {"x_origin": "beat", "x_once": {"graceful": True}}
    with pytest.raises(ConfigurationError, match="unknown send option 'countdwon': did you mean 'countdown'"):
        proj.whoami.apply_async((4,), countdwon=5)
    with pytest.raises(ConfigurationError, match=r"send option 'x_obj' .* must be JSON, not object"):
        proj.whoami.apply_async((4,), x_obj=object())


def test_a_custom_state_is_seen_while_the_task_runs(ledger: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    running = proj.progress.delay(str(release))
    wait_for(lambda: running.state == "PROGRESS", timeout=60, what="the PROGRESS state")
    assert running.info == {"done": 1, "of": 2} and not running.ready()
    release.touch()
    assert running.get(timeout=60) == "released"
    assert running.state == "SUCCESS" and running.info == "released"

    # get(on_message=...): each state the task records, as it is seen
    heard: list[tuple[str, Any]] = []
    second_release = tmp_path / "second-release"

    def on_message(message: dict[str, Any]) -> None:
        heard.append((message["status"], message["result"]))
        if message["status"] == "PROGRESS":
            second_release.touch()

    second = proj.progress.delay(str(second_release))
    assert second.get(timeout=60, on_message=on_message) == "released"
    assert ("PROGRESS", {"done": 1, "of": 2}) in heard and heard[-1] == ("SUCCESS", "released")
    assert len(heard) == len(set(map(repr, heard)))  # a message per change, not per poll


def test_a_retry_with_new_arguments_runs_with_them(ledger: Path) -> None:
    result = proj.countdown_to.delay(2)
    assert result.get(timeout=60) == [2, 1, 0] and result.retries == 2
    assert tuple(result.args) == (0,) and result.kwargs == {"seen": [2, 1]}


def test_map_starmap_and_chunks(ledger: Path) -> None:
    assert proj.tsum.map([[1, 2], [3]]).delay().get(timeout=60) == [3, 3]
    assert proj.add.starmap([(1, 2), (3, 4)]).apply_async().get(timeout=60) == [3, 7]
    parts = proj.add.chunks([(i, i) for i in range(7)], 3).apply_async()
    assert parts.get(timeout=60) == [[0, 2, 4], [6, 8, 10], [12]]


def test_workflows_in_eager_mode(sqlite_url: str) -> None:
    proj.app.conf.broker_url = sqlite_url
    proj.app.conf.task_always_eager = True
    try:
        assert (proj.add.s(2, 2) | proj.mul.s(10)).delay().get() == 40
        assert chord([proj.add.s(1, 1), proj.add.s(2, 2)], proj.tsum.s()).apply_async().get() == 6
        assert group(proj.add.s(1, 1), proj.mul.s(2, 3)).apply_async().get() == [2, 6]
    finally:
        proj.app.conf.task_always_eager = False
        proj.app.close()


def test_time_limits_of_a_task_and_of_a_call(database_url: str, tmp_path: Path) -> None:
    """Per-task and per-call limits, enforced by the prefork pool of a real worker."""
    from celery.exceptions import TimeLimitExceeded

    proj.app.conf.broker_url = database_url
    proj.app.set_current()
    log = tmp_path / "worker.log"
    process = worker_process(
        database_url,
        tmp_path / "ledger",
        "canvas-pf",
        app="tests.compat.apps.canvas_app",
        pool="prefork",
        output=log,
    )
    try:
        assert proj.soft_limited.delay().get(timeout=60) == "soft limit reached"
        killed = proj.sleepy.apply_async((60,), time_limit=1)
        with pytest.raises(TimeLimitExceeded, match="time limit of 1s"):
            killed.get(timeout=60)
        assert proj.sleepy.apply_async((0,)).get(timeout=60) == 0  # no limit of its own
        # A soft limit above the hard one: the hard limit ends the task (FAILURE), as in Celery.
        over = proj.sleepy.apply_async((60,), time_limit=1, soft_time_limit=30)
        with pytest.raises(TimeLimitExceeded):
            over.get(timeout=60)
        assert over.state == "FAILURE"
        # revoke(terminate=True) kills the process running the task at the next heartbeat.
        running = proj.sleepy.apply_async((60,))
        wait_for(lambda: running.record().status is Status.PENDING, timeout=60, what="the task to start")
        running.revoke(terminate=True)
        assert running.state == "REVOKED"
        terminated = f"Task tests.compat.apps.canvas_app.sleepy[{running.id}] terminated"
        wait_for(lambda: terminated in log.read_text(), timeout=30, what="the termination")
        assert proj.sleepy.apply_async((0,)).get(timeout=60) == 0
    finally:
        stop(process)
        proj.app.close()
    assert process.returncode == 0  # nothing left running: the warm shutdown was immediate
