"""task_always_eager / task_eager_propagates / apply(), and patching ``.delay`` with
unittest.mock, as Celery users test their code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from tests.compat.apps import results_app as proj


@pytest.fixture
def eager() -> Iterator[None]:
    proj.app.conf.update(task_always_eager=True, task_eager_propagates=False)
    yield
    proj.app.conf.update(task_always_eager=False, task_eager_propagates=False)


def test_eager_mode_runs_in_process_with_an_eager_request(eager: None) -> None:
    from celery.result import EagerResult

    result = proj.add.delay(2, 3)
    assert isinstance(result, EagerResult) and result.get() == 5 and result.state == "SUCCESS"
    seen = proj.whoami.apply_async((1,), task_id="eager-1").get()
    assert seen["id"] == "eager-1" and seen["is_eager"] is True and seen["called_directly"] is False


def test_eager_failures_propagate_only_when_asked(eager: None) -> None:
    failed = proj.fail.delay("x")
    assert (
        failed.state == "FAILURE"
        and isinstance(failed.result, proj.AppError)
        and "AppError" in failed.traceback
    )
    with pytest.raises(proj.AppError):
        failed.get()
    assert isinstance(failed.get(propagate=False), proj.AppError)
    proj.app.conf.task_eager_propagates = True
    with pytest.raises(proj.AppError, match="y"):
        proj.fail.delay("y")


def test_eager_runs_let_system_exit_and_keyboard_interrupt_through(eager: None) -> None:
    # as Celery's tracer: never a FAILURE result that the caller carries on with
    @proj.app.task(name="eager.exits")
    def exits(kind: str) -> None:
        raise SystemExit(2) if kind == "exit" else KeyboardInterrupt()

    with pytest.raises(SystemExit):
        exits.delay("exit")
    with pytest.raises(KeyboardInterrupt):
        exits.apply(("interrupt",))


def test_eager_retries_run_at_once_up_to_max_retries(eager: None) -> None:
    from celery.exceptions import MaxRetriesExceededError

    assert proj.flaky.delay(2).get() == 2
    over = proj.flaky.apply((10,))
    assert over.state == "FAILURE" and isinstance(over.result, ConnectionError) and over.retries == 3
    assert isinstance(proj.exhausts.apply().result, MaxRetriesExceededError)
    auto = proj.autoretried.apply(("k",))
    assert isinstance(auto.result, KeyError) and auto.retries == 2


def test_direct_call_and_typing() -> None:
    assert proj.add(1, 2) == 3
    assert proj.whoami()["called_directly"] is True
    with pytest.raises(TypeError, match="add"):
        proj.add.delay(1)
    with pytest.raises(TypeError):
        proj.add.apply_async((1, 2, 3))


def test_delay_is_patchable_with_mock() -> None:
    with mock.patch.object(proj.add, "delay") as delay:
        delay.return_value.id = "fake"
        assert proj.add.delay(1, 2).id == "fake"
    delay.assert_called_once_with(1, 2)
    with mock.patch("tests.compat.apps.results_app.add.apply_async") as apply_async:
        proj.add.apply_async((1, 2), countdown=5)
    apply_async.assert_called_once_with((1, 2), countdown=5)


def test_signatures_of_one_task(eager: None) -> None:
    from celery import signature

    sig = proj.add.s(1)
    assert sig.name == "tests.compat.apps.results_app.add" and sig.args == (1,)
    assert sig.delay(2).get() == 3  # partial: arguments given later go first
    assert sig.clone(args=(10,)).args == (10, 1)
    immutable = proj.add.si(2, 2).set(queue="q1", countdown=1)
    assert immutable.clone(args=(5,)).args == (2, 2) and immutable.options == {"queue": "q1", "countdown": 1}
    proj.app.set_current()  # a signature by name belongs to the current app
    assert signature("tests.compat.apps.results_app.add", args=(4, 4)).apply().get() == 8
    assert sig(5) == 6
    assert (sig | proj.add.s(1)).apply((2,)).get() == 4  # eager: (2 + 1) + 1


def test_chord_run_sends_a_header_with_its_body(eager: None) -> None:
    from celery import chord

    result = chord([]).run([proj.add.s(1, 2), proj.add.s(3, 4)], proj.whoami.s(), eager=True)
    assert result.get()["args"] == [[3, 7]]
    sent = chord([]).run([proj.add.s(5, 5)], proj.whoami.s(), task_id="chord-run-1")  # always eager
    assert sent.get()["args"] == [[10]]


def test_a_workflow_runs_on_its_tasks_app_not_the_current_one(eager: None, tmp_path: Path) -> None:
    from celery import Celery, chain, chord, group

    other = Celery("elsewhere", broker=f"sqlite:///{tmp_path / 'other.sqlite3'}")  # now current
    try:
        assert group(proj.add.s(1, 1)).app is proj.app and chord([proj.add.s(1, 1)]).app is proj.app
        assert chord([]).run([proj.add.s(5, 5)], proj.whoami.s()).get()["args"] == [[10]]  # eager here
        assert group(proj.add.s(1, 1), proj.add.s(2, 2)).apply_async().get() == [2, 4]
        assert chain(proj.add.s(1, 1), proj.add.s(2)).apply_async().get() == 4
        assert group([]).app is other  # no task names an app: the current one
    finally:
        other.close()
        proj.app.set_current()


def test_eager_chains_through_groups_and_their_parents(eager: None) -> None:
    from celery import chain, group
    from celery.result import GroupResult

    fan_out = (proj.add.s(1, 1) | group(proj.add.s(1), proj.add.s(2))).delay()
    assert isinstance(fan_out, GroupResult) and fan_out.get() == [3, 4]
    assert fan_out.parent.get() == 2  # the step before the group
    nested = group(proj.add.s(1, 1) | group(proj.add.s(1), proj.add.s(2)), proj.add.s(5, 5)).delay()
    assert nested.get() == [[3, 4], 10]  # a chain ending in a group stays one member
    assert group(proj.add.s(1, 1), group(proj.add.s(2, 2), proj.add.s(3, 3))).delay().get() == [2, 4, 6]
    last = chain(proj.add.s(1, 2), proj.add.s(3), proj.add.s(4)).delay()
    values, node = [], last
    while node is not None:
        values.append(node.get())
        node = node.parent
    assert values == [10, 6, 3]
    last_fails = chain(proj.add.s(1, 1), proj.fail.si("end")).delay()
    assert last_fails.state == "FAILURE" and last_fails.parent.get() == 2
    with pytest.raises(proj.AppError, match="mid"):  # as Celery: the next step reads it
        chain(proj.add.s(1, 1), proj.fail.si("mid"), proj.add.s(1)).delay()


def test_eager_retry_propagates_when_asked(eager: None) -> None:
    from celery.exceptions import Retry

    with pytest.raises(Retry, match="attempt 0"):
        proj.flaky.apply((2,), throw=True)  # as Celery: the first retry's Retry, one run
    proj.app.conf.task_eager_propagates = True
    with pytest.raises(Retry, match="KeyError"):
        proj.autoretried.delay("k")
    assert proj.flaky.apply((1,), throw=False).get() == 1  # without propagation: retried here


def test_a_send_to_an_unreachable_database_raises_kombus_operational_error() -> None:
    import kombu.exceptions
    from celery import Celery, exceptions

    from pgtasks.sysdb.errors import DatabaseUnavailable

    assert exceptions.OperationalError is kombu.exceptions.OperationalError
    app = Celery("down", broker="postgresql://nobody:secret@127.0.0.1:1/none")
    add = app.task(name="down.add")(lambda x, y: x + y)
    with pytest.raises(add.OperationalError, match="cannot connect") as failed:
        add.delay(1, 2)
    assert isinstance(failed.value, DatabaseUnavailable) and "secret" not in str(failed.value)
    with pytest.raises(exceptions.OperationalError):
        app.send_task("down.add", (1, 2))
    with pytest.raises(exceptions.OperationalError):
        (add.s(1, 2) | add.s(3)).delay()


def test_eager_results_are_stored_when_asked(eager: None) -> None:
    from celery import group
    from celery.result import AsyncResult, GroupResult

    plain = proj.add.delay(1, 2)
    assert not AsyncResult(plain.id, app=proj.app).exists  # not stored by default
    proj.app.conf.task_store_eager_result = True
    try:
        stored = proj.add.delay(1, 2)
        read = AsyncResult(stored.id, app=proj.app)
        assert read.state == "SUCCESS" and read.get(timeout=5) == 3
        failed = AsyncResult(proj.fail.delay("z").id, app=proj.app)
        assert failed.state == "FAILURE" and isinstance(failed.result, proj.AppError)
        fan = group(proj.add.s(1, 1), proj.add.s(2, 2)).delay()
        fan.save()
        restored = GroupResult.restore(fan.id, app=proj.app)
        assert restored is not None and restored.get(timeout=5) == [2, 4]
    finally:
        proj.app.conf.task_store_eager_result = False


def test_a_signature_chains_only_with_signatures() -> None:
    with pytest.raises(TypeError, match="unsupported operand"):
        proj.add.s(1, 1) | None
    with pytest.raises(TypeError, match="unsupported operand"):
        (proj.add.s(1, 1) | proj.add.s(2)) | 3


def test_eager_tasks_wait_for_results_and_retry_as_celery_does(eager: None) -> None:
    from celery.result import allow_join_result

    inside = proj.waits_on_another.delay()  # result.get() inside a task, eager too
    assert inside.state == "FAILURE" and isinstance(inside.result, RuntimeError)
    assert "Never call result.get() within a task" in str(inside.result)
    with allow_join_result():  # Celery runs an eager apply_async in denied_join_result()
        still = proj.waits_on_another.delay()
    assert still.state == "FAILURE" and isinstance(still.result, RuntimeError)
    assert proj.waits_on_another.apply().get() == 2  # apply() runs it where it may wait
    assert proj.add.delay(1, 1).get() == 2  # outside a task: fine
    quiet = proj.retries_quietly.delay()  # retry(throw=False) eagerly: returned, no retry
    assert quiet.state == "SUCCESS" and quiet.get() == "body value" and quiet.retries == 0


def test_tasks_run_by_apply_may_wait_for_nested_applies_as_in_celery() -> None:
    """Celery's t/integration test_apply_nested_parent_child_relationship: only an eager
    apply_async (and a worker's task) refuses result.get(); apply() runs its task where it may
    wait, and each nested apply() is the child of the task that made it."""
    from celery.result import allow_join_result, denied_join_result

    app = proj.app

    @app.task(bind=True, name="t.nested_grandchild", shared=False)
    def grandchild(self):  # type: ignore[no-untyped-def]
        return [self.request.id, self.request.parent_id, self.request.root_id]

    @app.task(bind=True, name="t.nested_child", shared=False)
    def child(self):  # type: ignore[no-untyped-def]
        return [self.request.id, self.request.parent_id, self.request.root_id, grandchild.apply().get()]

    @app.task(bind=True, name="t.nested_parent", shared=False)
    def parent(self):  # type: ignore[no-untyped-def]
        return [self.request.id, self.request.parent_id, self.request.root_id, child.apply().get()]

    top, no_parent, root, (middle, middle_parent, middle_root, (low, low_parent, low_root)) = (
        parent.apply().get()
    )
    assert (no_parent, root) == (None, top)
    assert (middle_parent, middle_root) == (top, top) and (low_parent, low_root) == (middle, top)
    assert len({top, middle, low}) == 3
    done = proj.add.apply((1, 2))
    with denied_join_result():  # refused outside any task too, as Celery's
        with pytest.raises(
            RuntimeError, match=r"^Never call result.get\(\) within a task!\nSee .*subtasks\n$"
        ):
            done.get()
        with allow_join_result():
            assert done.get() == 3
    assert done.get() == 3


def test_eager_propagation_raises_before_the_failure_handlers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Celery's eager tracer with propagation: the error leaves before on_failure,
    on_retry, after_return and their signals; task_postrun gets state None and
    task_internal_error is sent. Without propagation every handler runs."""
    from celery.exceptions import Retry
    from celery.signals import task_internal_error

    from tests.compat.apps import signals_app
    from tests.support.ledger import lines_of

    ledger = tmp_path / "ledger"
    monkeypatch.setenv("PGTASKS_TEST_LEDGER", str(ledger))
    internal: list[tuple[str, str]] = []

    def on_internal(sender: object = None, task_id: str = "", exception: object = None, **_: object) -> None:
        internal.append((task_id, type(exception).__name__))

    task_internal_error.connect(on_internal)
    try:
        with pytest.raises(ValueError, match="broken"):
            signals_app.broken.apply(task_id="thrown", throw=True)
        with pytest.raises(Retry):
            signals_app.retried.apply(task_id="retried", throw=True)
        kept = signals_app.broken.apply(task_id="kept")
    finally:
        task_internal_error.disconnect(on_internal)
    assert kept.state == "FAILURE"
    assert internal == [("thrown", "ValueError"), ("retried", "Retry")]
    events = [e for e in lines_of(ledger) if "prerun" not in e and "on_task_init" not in e]
    assert [e for e in events if "thrown" in e] == [
        "hook before_start thrown",
        "signal task_postrun thrown None",
    ]
    assert [e for e in events if "retried" in e] == [
        "hook before_start retried",
        "signal task_postrun retried None",
    ]
    assert [e for e in events if "kept" in e] == [
        "hook before_start kept",
        "hook on_failure kept ValueError einfo",
        "signal task_failure kept ValueError",
        "hook after_return kept FAILURE None",
        "signal task_postrun kept FAILURE",
    ]
