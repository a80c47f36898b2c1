"""A Celery app (tests/compat/apps/results_app.py) run by a real `pgtasks worker`: results,
exceptions, retries, routing and revoke as Celery documents them."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

import pgtasks
from tests.compat.apps import results_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for

QUEUES = "celery,named,globbed,by_function,own"


@pytest.fixture
def worker(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A worker of results_app on every routed queue; the test's app object points at the same
    database (its broker is read from the environment at import time, so it is set here)."""
    module, path = "tests.compat.apps.results_app", tmp_path / "ledger"
    with celery_worker(
        proj.app, module, database_url, path, monkeypatch, "celery-w1", extra_args=("-Q", QUEUES)
    ):
        yield path


def test_values_states_and_the_original_exception_type(worker: Path) -> None:
    result = proj.add.delay(2, 3)
    assert result.get(timeout=30) == 5
    assert result.state == "SUCCESS" and result.successful() and result.ready()
    assert result.date_done is not None and result.name == "tests.compat.apps.results_app.add"
    # what celery-progress reads: the backend's meta, and get() with the id as its "timeout"
    meta = result._get_task_meta()
    assert {k: meta[k] for k in ("status", "result", "traceback", "task_id", "args", "kwargs")} == {
        "status": "SUCCESS",
        "result": 5,
        "traceback": None,
        "task_id": result.id,
        "args": [2, 3],
        "kwargs": {},
    }
    assert meta["date_done"] == result.date_done and meta["name"] == result.name
    assert result.get(result.id) == 5  # a ready result never reads its timeout, as in Celery
    assert proj.add._get_app() is proj.app  # celery-once and celery-singleton call it

    failed = proj.fail.apply_async(("boom",))
    with pytest.raises(proj.AppError, match="boom"):
        failed.get(timeout=30)
    assert failed.state == "FAILURE" and failed.failed()
    assert isinstance(failed.result, proj.AppError) and "AppError: boom" in (failed.traceback or "")
    failed_meta = failed._get_task_meta()
    assert failed_meta["status"] == "FAILURE" and isinstance(failed_meta["result"], proj.AppError)
    assert "AppError: boom" in failed_meta["traceback"]
    assert proj.app.AsyncResult("no-such-id")._get_task_meta()["status"] == "PENDING"
    assert isinstance(failed.get(timeout=5, propagate=False), proj.AppError)

    napping = proj.nap.delay(1.5)  # pgtasks.sleep from a Celery task (docs/waiting.md)
    client = pgtasks.Client(proj.app.conf.broker_url)  # the database the app sends to

    def suspended() -> bool:
        record = client.engine.get_task(napping.id)
        return record is not None and record.status is pgtasks.Status.DELAYED

    wait_for(suspended, timeout=30, what="the Celery task to sleep without its worker slot")
    assert napping.get(timeout=30) == "rested"
    client.close()


def test_request_inside_the_worker(worker: Path) -> None:
    seen = proj.whoami.apply_async((1, 2), {"k": "v"}, task_id="my-own-id").get(timeout=30)
    assert seen == {
        "id": "my-own-id",
        "retries": 0,
        "hostname": "celery@celery-w1",  # -n without "@" names the host, as in Celery
        "is_eager": False,
        "called_directly": False,
        "args": [1, 2],
        "kwargs": {"k": "v"},
        "routing_key": "celery",
    }


def test_retry_keeps_the_task_id_and_counts_retries(worker: Path) -> None:
    result = proj.flaky.delay(2)
    assert result.get(timeout=30) == 2
    assert result.retries == 2
    attempts = [line.split() for line in worker.read_text().splitlines() if " attempt " in line]
    assert attempts == [[result.id, "attempt", "0"], [result.id, "attempt", "1"], [result.id, "attempt", "2"]]


def test_retry_limits(worker: Path) -> None:
    from celery.exceptions import MaxRetriesExceededError

    over = proj.flaky.delay(10)  # max_retries=3: the retry's own exception at the limit
    with pytest.raises(ConnectionError, match="attempt 3"):
        over.get(timeout=30)
    assert over.retries == 3
    exhausted = proj.exhausts.delay()
    with pytest.raises(MaxRetriesExceededError, match="Can't retry"):
        exhausted.get(timeout=30)
    auto = proj.autoretried.delay("missing")
    with pytest.raises(KeyError):
        auto.get(timeout=30)
    assert auto.retries == 2
    not_retried = proj.autoretried.delay("index")  # dont_autoretry_for wins over autoretry_for
    with pytest.raises(IndexError):
        not_retried.get(timeout=30)
    assert not_retried.retries == 0
    runs = collections.Counter(worker.read_text().split("\n"))
    assert runs["autoretried missing"] == 3 and runs["autoretried index"] == 1


def test_an_exception_its_arguments_do_not_rebuild_is_celerys_wrapper(worker: Path) -> None:
    """As Celery's worker stores an exception that does not survive pickling: get() raises
    (and .result holds, also while the task waits to retry) an UnpickleableExceptionWrapper
    with the class name and arguments, not a pgtasks TaskError."""
    from celery.utils.serialization import UnpickleableExceptionWrapper

    failed = proj.fails_unrebuildable.delay("E42")
    with pytest.raises(UnpickleableExceptionWrapper) as raised:
        failed.get(timeout=30)
    wrapper = raised.value
    assert (wrapper.exc_module, wrapper.exc_cls_name, wrapper.exc_args) == (
        "tests.compat.apps.results_app",
        "TwoPartError",
        ("E42",),
    )
    assert wrapper.text == "TwoPartError('E42')" and failed.state == "FAILURE"
    retrying = proj.retries_unrebuildable.delay("E7")
    wait_for(lambda: retrying.state == "RETRY", timeout=30)
    assert isinstance(retrying.result, UnpickleableExceptionWrapper)
    assert retrying.result.exc_args == ("E7",)
    retrying.revoke()


def test_routing(worker: Path) -> None:
    expected = {
        proj.routed_by_name: "named",
        proj.glob_match: "globbed",
        proj.routed_by_function: "by_function",
        proj.own_queue: "own",
        proj.add: "celery",
    }
    for task, queue in expected.items():
        result = task.apply_async((1, 2) if task is proj.add else ())
        assert result.queue == queue
        result.get(timeout=30)
    explicit = proj.routed_by_name.apply_async(queue="celery")
    assert explicit.queue == "celery" and explicit.get(timeout=30) == "named"
    assert proj.shared_double.delay(21).get(timeout=30) == 42


def test_get_inside_a_task_is_refused(worker: Path) -> None:
    with pytest.raises(RuntimeError, match=r"Never call result.get"):
        proj.waits_on_another.delay().get(timeout=30)


def test_revoke_is_durable_and_unknown_ids_are_distinguishable(worker: Path) -> None:
    waiting = proj.record.apply_async(("revoked",), countdown=0.5)
    waiting.revoke()
    assert waiting.state == "REVOKED"
    later = proj.record.apply_async(("after",))
    assert later.get(timeout=30) == "after"
    from celery.exceptions import TaskRevokedError

    with pytest.raises(TaskRevokedError):
        waiting.get(timeout=5)
    assert "ran revoked" not in worker.read_text()
    unknown = proj.app.AsyncResult("no-such-task")
    assert unknown.state == "PENDING" and not unknown.exists and waiting.exists


def test_ignore_records_no_failure(worker: Path) -> None:
    result = proj.ignored.delay()
    wait_for(lambda: result.ready(), what="ignored task finished")
    assert result.state == "SUCCESS" and result.result is None


def test_then_calls_back_when_the_task_is_ready(worker: Path) -> None:
    """``AsyncResult.then`` / ``GroupResult.then``: the callback gets the ready result on
    pgtasks' waiting thread (a task that fails is ready too), once in all even when ``get()``
    reads the ready state as well; ``on_error`` gets what the callback raised."""
    import threading

    from pgtasks.compat.celery import group

    seen: dict[str, list[object]] = collections.defaultdict(list)
    done = threading.Event()

    def note(key: str) -> object:
        def callback(result: object) -> object:
            seen[key].append((result, threading.current_thread().name))
            if len(seen) == 4:
                done.set()
            return key

        return callback

    napping = proj.nap.delay(0.3)
    chained = napping.then(note("nap"))
    failed = proj.fail.delay("then")
    failed.then(note("fail"))
    errors: list[BaseException] = []
    proj.add.delay(1, 1).then(lambda r: 1 / 0, on_error=errors.append)
    members = group(proj.add.s(i, i) for i in range(3)).apply_async()
    members.then(note("group"))
    assert napping.get(timeout=30) == "rested"  # the reader may run the callbacks itself
    wait_for(lambda: errors and len(seen) == 3, timeout=30, what="then() callbacks")
    ((nap_result, _),) = seen["nap"]
    assert nap_result is napping and chained.ready and chained.value == ("nap",)
    ((fail_result, thread),) = seen["fail"]
    assert fail_result is failed and fail_result.state == "FAILURE"
    assert thread != threading.main_thread().name  # nobody read it here: the waiting thread did
    ((group_result, _),) = seen["group"]
    assert group_result is members and members.get(timeout=5) == [0, 2, 4]
    assert isinstance(errors[0], ZeroDivisionError)

    late = proj.add.delay(2, 2)
    assert late.get(timeout=30) == 4
    late.then(note("late"))  # a task already done calls back at once from the waiting thread
    assert done.wait(30) and [r for r, _ in seen["late"]] == [late]
    assert len(seen["nap"]) == len(seen["fail"]) == len(seen["group"]) == 1  # once each


def test_the_integration_test_manager(worker: Path, tmp_path: Path) -> None:
    """``celery.contrib.testing.manager.Manager``, as Celery's integration tests use it:
    tasks a worker runs are accepted, waits retry with growing pauses, joins remark what is
    missing, and the queue is idle at the end."""
    import io

    from celery.contrib.testing.manager import Manager, Sentinel

    out = io.StringIO()
    manager = Manager(proj.app, stdout=out, stderr=out)
    release = tmp_path / "release"
    running = proj.block.delay(str(release))
    manager.assert_accepted([running.id], max_retries=600, interval_max=0.1)
    assert (
        manager.is_received([running.id]) and running.id in manager.query_task_states([running.id])["active"]
    )
    assert not manager.is_accepted(["no-such-task"])
    manager.ensure_not_for_a_while(
        lambda: manager.true_or_raise(running.ready), (Sentinel,), desc="the end", max_retries=2
    )
    with pytest.raises(AssertionError, match="Should not have happened: at once"):
        manager.ensure_not_for_a_while(lambda: True, (Sentinel,), desc="at once")
    with pytest.raises(AssertionError, match="Missing task results"):
        manager.join(running, timeout=0.05, max_retries=1)
    assert f"!Still waiting for 1/1: [{running.id}]" in out.getvalue()
    with pytest.raises(Sentinel):  # still running: one retry, said on stderr, then it gives up
        manager.wait_for(
            lambda: manager.true_or_raise(running.ready),
            (Sentinel,),
            desc="the nap",
            emit_warning=True,
            max_retries=1,
        )
    assert "Still waiting for the nap.  Trying again in 0.10 seconds: Sentinel()" in out.getvalue()
    release.touch()
    # Celery's manager returns what ResultSet.get gives with a callback: None
    assert manager.join(running, timeout=30) is None and running.get(timeout=30) == "slept"
    manager.assert_result_tasks_in_progress_or_completed([running])
    manager.wait_until_idle()
    active = manager.inspect().active()
    assert active is not None and list(active) and not any(active.values())  # one worker, idle
