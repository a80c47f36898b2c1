"""The result classes as Celery's applications handle them: ``app.AsyncResult``,
``app.GroupResult`` and ``app.ResultSet`` are classes bound to the app, results compare, hash,
pickle and copy as Celery's do, ``join(callback=)`` hands the values to the callback instead of
returning them, and billiard's exception module is served."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import group
from celery.result import AsyncResult, EagerResult, GroupResult, ResultSet

from tests.compat.apps import results_app as proj
from tests.support.celery_worker import celery_worker


@pytest.fixture
def worker(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    module, path = "tests.compat.apps.results_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "classes-w1"):
        yield path


def test_the_apps_result_classes_are_classes_bound_to_it(worker: Path) -> None:
    app = proj.app
    for bound, base in (
        (app.AsyncResult, AsyncResult),
        (app.GroupResult, GroupResult),
        (app.ResultSet, ResultSet),
    ):
        assert isinstance(bound, type) and issubclass(bound, base) and bound is getattr(app, base.__name__)
    sent = proj.add.delay(1, 2)
    read = app.AsyncResult(sent.id)
    assert isinstance(read, app.AsyncResult) and read.app is app and read.get(timeout=30) == 3
    assert isinstance(sent, AsyncResult) and read == sent

    members = group(proj.add.s(i, i) for i in range(3)).apply_async()
    assert members.get(timeout=30) == [0, 2, 4]
    restored = app.GroupResult.restore(members.id)
    assert restored is not None and restored == members and hash(restored) == hash(members)
    assert [r.id for r in restored.results] == [r.id for r in members.results]
    assert app.GroupResult.restore("no-such-group") is None
    made = app.GroupResult(members.id, [app.AsyncResult(r.id) for r in members.results])
    assert made.app is app and made == members and made.get(timeout=30) == [0, 2, 4]
    assert app.ResultSet([read]).app is app and app.ResultSet([read]).get(timeout=30) == [3]


def test_results_pickle_and_copy_without_their_app(worker: Path) -> None:
    app = proj.app
    done = proj.add.delay(2, 2)
    assert done.get(timeout=30) == 4
    for result in (done, app.AsyncResult(done.id)):
        back = pickle.loads(pickle.dumps(result))
        assert type(back) is AsyncResult and back == result and back.get(timeout=30) == 4
    members = group(proj.add.s(i, 1) for i in range(2)).apply_async()
    for made in (members, app.GroupResult(members.id, list(members.results))):
        back = pickle.loads(pickle.dumps(made))
        assert type(back) is GroupResult and back == made and back.get(timeout=30) == [1, 2]
        assert copy.deepcopy(made) == made and copy.copy(made) == made
    several = app.ResultSet([done])
    back = pickle.loads(pickle.dumps(several))
    assert type(back) is ResultSet and back == several and back.join(timeout=30) == [4]
    eager = proj.add.apply((3, 4))
    back = pickle.loads(pickle.dumps(eager))
    assert type(back) is EagerResult and back.get() == 7 and back.state == "SUCCESS" and back.id == eager.id


def test_group_results_and_result_sets_compare_as_celerys() -> None:
    one, two = AsyncResult("a", app=proj.app), AsyncResult("b", app=proj.app)
    assert GroupResult("g", [one, two]) == GroupResult("g", [AsyncResult("a"), AsyncResult("b")])
    assert GroupResult("g", [one, two]) != GroupResult("g", [one]) and GroupResult("g", [one]) != GroupResult(
        "h", [one]
    )
    assert GroupResult("g", [one]) == "g" and str(GroupResult("g", [one])) == "g"
    assert hash(GroupResult("g", [one])) == hash(GroupResult("g", [two])) == hash("g")
    assert bool(GroupResult("g", [])) and not bool(GroupResult(None, []))
    assert repr(GroupResult("g", [one, two])) == "<GroupResult: g [a, b]>"
    assert ResultSet([one, two]) == ResultSet([AsyncResult("a"), AsyncResult("b")]) != ResultSet([two, one])
    assert repr(ResultSet([one, two])) == "<ResultSet: [a, b]>"
    with pytest.raises(TypeError, match="unhashable"):
        hash(ResultSet([one]))  # equal by members, which change: as Celery's


def test_join_with_a_callback_hands_the_values_over_instead(worker: Path) -> None:
    members = group(proj.add.s(i, 10) for i in range(3)).apply_async()
    seen: list[tuple[str, int]] = []
    assert members.join(timeout=30, callback=lambda task_id, value: seen.append((task_id, value))) == []
    assert seen == [(r.id, 10 + i) for i, r in enumerate(members.results)]
    seen.clear()
    assert (
        members.join_native(timeout=30, callback=lambda task_id, value: seen.append((task_id, value))) is None
    )
    assert [value for _, value in seen] == [10, 11, 12]
    assert members.join_native(timeout=30) == [10, 11, 12] == members.get(timeout=30)
    assert members.get(timeout=30, callback=lambda task_id, value: None) is None  # join_native's


def test_args_are_a_list_and_children_an_empty_list_once_ended(worker: Path) -> None:
    done = proj.add.delay(5, 6)
    assert done.get(timeout=30) == 11
    assert done.args == [5, 6] and done.kwargs == {}
    assert done.children == []
    assert proj.app.AsyncResult("nothing-sent-with-this-id").children is None


def test_billiard_exceptions_are_the_classes_celery_exceptions_give() -> None:
    import billiard.exceptions as billiard_exceptions
    import celery.exceptions as celery_exceptions

    for name in ("SoftTimeLimitExceeded", "TimeLimitExceeded", "WorkerLostError", "Terminated"):
        assert getattr(billiard_exceptions, name) is getattr(celery_exceptions, name), name
    assert issubclass(billiard_exceptions.TimeoutError, billiard_exceptions.ProcessError)
    assert issubclass(billiard_exceptions.RestartFreqExceeded, Exception)


def test_a_deleted_group_is_restored_no_more(worker: Path) -> None:
    sent = group(proj.add.s(i, 0) for i in range(2)).apply_async()
    assert sent.get(timeout=30) == [0, 1]
    assert GroupResult.restore(sent.id) == sent  # a sent group is stored with its tasks
    sent.delete()
    assert GroupResult.restore(sent.id) is None
    assert sent.get(timeout=30) == [0, 1]  # its tasks are the history and stay
    made = GroupResult("by-hand-group", [proj.add.delay(1, 1)]).save()
    assert GroupResult.restore("by-hand-group") == made
    made.delete()
    assert GroupResult.restore("by-hand-group") is None


def test_a_declared_error_is_logged_at_info_without_its_traceback(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "worker.log"
    module, ledger = "tests.compat.apps.results_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, ledger, monkeypatch, "throws-w1", output=log):
        declared, undeclared = proj.raises_expected.delay("declared"), proj.raises_expected.delay("other")
        with pytest.raises(KeyError, match="declared"):
            declared.get(timeout=30)
        with pytest.raises(ValueError, match="undeclared"):
            undeclared.get(timeout=30)
    lines = log.read_text().splitlines()
    (line,) = [x for x in lines if declared.id in x and "raised" in x]
    assert "INFO" in line and f"[{declared.id}] raised expected: KeyError('declared')" in line
    (line,) = [x for x in lines if undeclared.id in x and "raised" in x]
    assert "ERROR" in line and "raised unexpected: ValueError('undeclared')" in line
    assert "ValueError: undeclared" in log.read_text()  # its traceback follows
    assert "KeyError: 'declared'" not in log.read_text()  # the declared one has none


def test_errbacks_run_before_on_failure_as_celerys() -> None:
    proj.ORDER.clear()
    result = proj.fails_in_order.apply(link_error=proj.errback_in_order.s())
    assert result.failed() and proj.ORDER == ["errback", "on_failure"]


def test_update_state_of_another_task_from_outside_a_worker(worker: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    running = proj.block.delay(str(release))
    waiting = proj.add.apply_async((1, 1), countdown=3600)
    for task_id in (running.id, waiting.id):
        proj.add.update_state(task_id=task_id, state="PROGRESS", meta={"done": 1})
        read = proj.app.AsyncResult(task_id)
        assert (read.state, read.info) == ("PROGRESS", {"done": 1}), task_id
    # An id no task has yet: nothing is stored, so the task sent with it later still runs.
    proj.add.update_state(task_id="sent-after-its-state", state="PROGRESS", meta={"done": 1})
    assert proj.add.apply_async((2, 3), task_id="sent-after-its-state").get(timeout=30) == 5
    release.touch()
    assert running.get(timeout=30) == "slept" and running.state == "SUCCESS"
    waiting.revoke()


def test_a_task_returning_nan_or_infinities_succeeds(worker: Path) -> None:
    import math

    result = proj.non_finite.delay()
    value = result.get(timeout=30)
    assert result.state == "SUCCESS" and math.isnan(value["mean"])
    assert value["bounds"] == [-math.inf, math.inf]
