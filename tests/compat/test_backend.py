"""``app.backend``, Celery's result-backend API (celery.backends.base), over pgtasks' own tables,
with a real `pgtasks worker`: what a worker stored is read back as Celery's meta, and states
written by hand end tasks, show unfinished states and release what waits for them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import chain, group
from celery.exceptions import TimeoutError
from celery.result import AsyncResult, GroupResult

from tests.compat.apps import canvas_app as proj
from tests.support.celery_worker import celery_app_on, celery_worker


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.canvas_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "backend-w1", concurrency=2):
        yield path


def test_the_backend_reads_what_the_worker_stored(ledger: Path) -> None:
    backend = proj.app.backend
    assert backend.ensure_chords_allowed() is None
    done = proj.add.delay(2, 3)
    meta = backend.wait_for(done.id, timeout=60)
    assert meta["status"] == "SUCCESS" and meta["result"] == 5 and meta["task_id"] == done.id
    assert meta["name"] == proj.add.name and meta["args"] == [2, 3] and meta["date_done"] is not None
    assert backend.get_state(done.id) == "SUCCESS" and backend.get_result(done.id) == 5
    same = AsyncResult(done.id, backend=backend)
    assert same.backend is backend and same.get(timeout=10) == 5
    assert done.backend is backend  # a result's backend is the app's

    failed = proj.fail.delay("x")
    meta = backend.wait_for(failed.id, timeout=60)
    assert meta["status"] == "FAILURE" and isinstance(meta["result"], proj.Broken)
    assert "Broken" in (backend.get_traceback(failed.id) or "")

    several = [proj.add.delay(i, i).id for i in range(3)]
    got = dict(backend.get_many(several, timeout=60))
    assert {k: v["result"] for k, v in got.items()} == {several[i]: 2 * i for i in range(3)}


def test_states_written_by_hand(ledger: Path) -> None:
    backend = proj.app.backend
    backend.mark_as_started("by-hand-1", progress=10)
    assert backend.get_state("by-hand-1") == "STARTED" and backend.get_result("by-hand-1") == {"progress": 10}
    backend.mark_as_retry("by-hand-1", ValueError("again"))
    assert backend.get_state("by-hand-1") == "RETRY"
    backend.mark_as_done("by-hand-1", [1, 2])
    assert AsyncResult("by-hand-1").get(timeout=10) == [1, 2]
    backend.mark_as_failure("by-hand-2", KeyError("k"))
    with pytest.raises(KeyError):
        AsyncResult("by-hand-2").get(timeout=10)
    backend.mark_as_revoked("by-hand-3", "not wanted")
    assert AsyncResult("by-hand-3").state == "REVOKED"
    assert backend.store_result("by-hand-4", {"x": 1}, "PROGRESS") == {"x": 1}
    assert backend.get_task_meta("by-hand-4")["status"] == "PROGRESS"
    with pytest.raises(TypeError, match="needs the exception"):
        backend.store_result("by-hand-5", "not an exception", "FAILURE")
    with pytest.raises(TimeoutError):
        backend.wait_for("by-hand-4", timeout=0.2)


def test_a_result_stored_by_hand_releases_the_chain_waiting_for_it(ledger: Path) -> None:
    # The first task will not run for an hour; storing its result sends the chain on at once.
    flow = chain(proj.add.s(1, 1).set(countdown=3600), proj.add.s(2)).delay()
    proj.app.backend.mark_as_done(flow.parent.id, 40)
    assert flow.get(timeout=60) == 42


def test_groups_saved_restored_and_deleted(ledger: Path) -> None:
    backend = proj.app.backend
    members = [proj.add.delay(1, 1), proj.add.delay(2, 2)]
    saved = GroupResult("saved-group", members, app=proj.app).save()
    restored = GroupResult.restore("saved-group", app=proj.app)
    assert restored is not None and [r.id for r in restored] == [r.id for r in saved]
    assert restored.get(timeout=60) == [2, 4]
    sent = group(proj.add.s(i, 1) for i in range(3)).delay()
    found = backend.restore_group(sent.id)
    assert found is not None and found.get(timeout=60) == [1, 2, 3]
    saved.delete()
    assert backend.restore_group("saved-group") is None
    assert backend.restore_group("no-such-group") is None


def test_an_empty_group_is_sent_and_joins_to_nothing(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj.app.conf.task_always_eager = False
    with celery_app_on(proj.app, database_url, tmp_path / "ledger", monkeypatch):
        result = group([]).apply_async()
        assert isinstance(result, GroupResult) and len(result) == 0 and result.get(timeout=10) == []


def test_as_uri_masks_the_password(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with celery_app_on(proj.app, database_url, tmp_path / "ledger", monkeypatch):
        assert proj.app.backend.as_uri(include_password=True) == proj.app.engine.settings.database_url
        other = type(proj.app.backend)(proj.app, url="postgresql://pgtasks:s3cret@db.local:5432/app")
        assert "s3cret" not in other.as_uri() and "db.local:5432/app" in other.as_uri()
        assert other.as_uri(include_password=True) == "postgresql://pgtasks:s3cret@db.local:5432/app"


def test_exceptions_to_and_from_celerys_dicts(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from celery.exceptions import Reject

    with celery_app_on(proj.app, database_url, tmp_path / "ledger", monkeypatch):
        backend = proj.app.backend
        ready = {"SUCCESS", "FAILURE", "REVOKED"}
        assert ready == backend.READY_STATES and "PENDING" in backend.UNREADY_STATES
        meta = backend.prepare_exception(KeyError("k"))
        assert meta == {"exc_type": "KeyError", "exc_message": ["k"], "exc_module": "builtins"}
        back = backend.exception_to_python(meta)
        assert type(back) is KeyError and back.args == ("k",)
        # As Celery's: an argument JSON cannot carry is its repr, the others stay as they are
        # (the exception's str was its only argument, so args[0] read "('bad', <object ...>)")
        mixed = backend.prepare_exception(ValueError("bad", object(), 3))["exc_message"]
        assert mixed[0] == "bad" and mixed[1].startswith("<object object at ") and mixed[2] == 3
        celerys = backend.exception_to_python(backend.prepare_exception(Reject("no")))
        assert type(celerys) is Reject
        unknown = backend.exception_to_python(
            {"exc_type": "Gone", "exc_module": "not.imported", "exc_message": ["x"]}
        )
        assert (
            type(unknown).__name__ == "Gone"
            and unknown.args == ("x",)
            and "not.imported" not in __import__("sys").modules
        )
        value = ValueError("as is")
        assert backend.exception_to_python(value) is value
