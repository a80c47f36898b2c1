"""Celery's built-in tasks (``celery.chain``, ``celery.chord``, ``celery.group``,
``celery.chunks``, ``celery.chord_unlock``, ``celery.map``, ...): the same names in
``app.tasks`` as the real Celery's, each doing what Celery's does when called here or sent by
name to a real `pgtasks worker` with the arguments Celery gives it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery, group
from celery.exceptions import ChordError, Retry
from celery.result import AsyncResult, GroupResult

from tests.compat.apps import canvas_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.cli import REPO, cli_env
from tests.support.redis import celery_python

CELERY_BUILTINS = [
    "celery.accumulate",
    "celery.backend_cleanup",
    "celery.chain",
    "celery.chord",
    "celery.chord_unlock",
    "celery.chunks",
    "celery.group",
    "celery.map",
    "celery.starmap",
]


def test_a_fresh_app_lists_the_real_celerys_builtin_tasks(sqlite_url: str) -> None:
    script = (
        "import json; from celery import Celery; app = Celery('proj', set_as_current=False); "
        "app.finalize(); print(json.dumps(sorted(app.tasks)))"
    )
    done = subprocess.run([str(celery_python()), "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == CELERY_BUILTINS
    # a fresh process: no shared task of another test module is there to join every app
    ours = subprocess.run(
        [sys.executable, "-c", f"from pgtasks.compat import install; install(); {script}"],
        cwd=REPO,
        env=cli_env(sqlite_url, {"PYTHONPATH": str(REPO)}),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(ours.stdout) == CELERY_BUILTINS
    app = Celery("proj", broker=sqlite_url, set_as_current=False)
    app.finalize()
    assert [n for n in sorted(app.tasks) if n in CELERY_BUILTINS] == CELERY_BUILTINS
    assert not any(n.startswith("pgtasks.") for n in app.tasks)
    assert "pgtasks.call_errback" in app.engine.registry.names()  # the engine's, not app.tasks'
    unlock = app.tasks["celery.chord_unlock"]
    assert (unlock.max_retries, unlock.ignore_result, unlock.default_retry_delay) == (None, True, 1.0)
    app.close()


def test_builtins_called_here_do_what_celerys_do(sqlite_url: str) -> None:
    app = Celery("proj", broker=sqlite_url, set_as_current=False)

    @app.task(name="proj.add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="proj.tsum")
    def tsum(numbers: list[int]) -> int:
        return sum(numbers)

    tasks = app.tasks
    # a task by name (pgtasks' messages) or by signature (Celery's: its arguments unused)
    assert tasks["celery.map"]("proj.tsum", [[1, 2], [3]]) == [3, 3]
    assert tasks["celery.map"](dict(tsum.s()), [[1, 2], [3]]) == [3, 3]
    assert tasks["celery.starmap"](dict(add.s(100)), [(1, 2), (3, 4)]) == [3, 7]
    assert tasks["celery.accumulate"](1, 2, 3) == (1, 2, 3)
    assert tasks["celery.accumulate"](1, 2, index=1) == 2
    with pytest.raises(NotImplementedError, match="chain is not a real task"):
        tasks["celery.chain"](1, x=2)
    chunked = tasks["celery.chunks"](dict(add.s()), [(1, 2), (3, 4), (5, 6)], 2)
    assert isinstance(chunked, GroupResult) and len(chunked.results) == 2
    assert all(app.AsyncResult(r.id).name == "celery.starmap" for r in chunked.results)
    members = group(add.s(1, 1), add.s(2, 2), app=app)
    frozen = members.freeze()
    sent = tasks["celery.group"](list(members.tasks), frozen.as_tuple(), frozen.id, ())
    assert isinstance(sent, GroupResult) and sent.id == frozen.id
    assert [r.id for r in sent.results] == [r.id for r in frozen.results]
    assert [list(app.AsyncResult(r.id).args) for r in sent.results] == [[1, 1], [2, 2]]
    body = tasks["celery.chord"]([dict(add.s(1, 1)), dict(add.s(2, 2))], dict(tsum.s()))
    assert isinstance(body, AsyncResult) and app.AsyncResult(body.id).name == "proj.tsum"
    # the header is not done: chord_unlock retries (here, called directly: Retry raised)
    unready = [r.as_tuple() for r in frozen.results]
    with pytest.raises(Retry):
        tasks["celery.chord_unlock"](frozen.id, dict(tsum.s()), result=unready)
    app.close()


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.canvas_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "builtins-w1", concurrency=4):
        yield path


def test_builtins_sent_by_name_run_in_a_worker_as_celerys(ledger: Path) -> None:
    app = proj.app

    def sig(task: Any, *args: Any) -> dict[str, Any]:
        return dict(task.s(*args))

    assert app.send_task("celery.map", (sig(proj.tsum), [[1, 2], [3]])).get(timeout=60) == [3, 3]
    assert app.send_task("celery.starmap", (proj.add.name, [[1, 2], [3, 4]])).get(timeout=60) == [3, 7]
    chunked = app.send_task("celery.chunks", (sig(proj.add), [[1, 2], [3, 4], [5, 6]], 2)).get(timeout=60)
    parts = GroupResult(chunked[0][0], [AsyncResult(r[0][0], app=app) for r in chunked[1]], app=app)
    assert parts.join(timeout=60) == [[3, 7], [11]]
    members = group(proj.add.s(1, 1), proj.add.s(2, 2))
    frozen = members.freeze()
    sent = app.send_task("celery.group", (list(members.tasks), frozen.as_tuple(), frozen.id, [])).get(
        timeout=60
    )
    assert sent[0][0] == frozen.id and frozen.join(timeout=60) == [2, 4]
    body = app.send_task("celery.chord", ([sig(proj.add, 1, 1), sig(proj.add, 2, 2)], sig(proj.tsum)))
    assert AsyncResult(body.get(timeout=60)[0][0], app=app).get(timeout=60) == 6
    chained = app.send_task("celery.chain", ())
    with pytest.raises(NotImplementedError, match="chain is not a real task"):
        chained.get(timeout=60)
    # chord_unlock: retries until the group is ready, then sends the callback with its values
    header = group(proj.sleepy.s(0.5), proj.add.s(3, 4))
    header_result = header.freeze()
    callback = proj.tsum.s().set(task_id="unlock-callback")
    header.apply_async()
    unlock = {"interval": 0.1, "result": [r.as_tuple() for r in header_result.results]}
    app.send_task("celery.chord_unlock", (header_result.id, dict(callback)), unlock)
    assert AsyncResult("unlock-callback", app=app).get(timeout=60) == 7.5
    # a failed member: the callback fails with ChordError naming it
    failing = group(proj.fail.s("boom"), proj.add.s(1, 1))
    failing_result = failing.freeze()
    failing.apply_async()
    failed_callback = proj.tsum.s().set(task_id="unlock-failed-callback")
    unlock = {"interval": 0.1, "result": [r.as_tuple() for r in failing_result.results]}
    app.send_task("celery.chord_unlock", (failing_result.id, dict(failed_callback)), unlock)
    with pytest.raises(ChordError, match=f"Dependency {failing_result.results[0].id} raised"):
        AsyncResult("unlock-failed-callback", app=app).get(timeout=60)
