"""Tasks and steps end to end with an in-process worker, on PostgreSQL and SQLite."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import pgtasks
from pgtasks import App, Client, Status
from pgtasks.engine import steps as steps_module
from pgtasks.engine.execution import execute_task
from pgtasks.sysdb.records import ClaimParams, NewTask, RecoverStaleParams
from tests.support.inprocess import running_worker, wait_for


class PaymentDeclined(Exception):
    """An application's own exception: it must come back from .get() as itself."""

    def __init__(self, order: int, reason: str) -> None:
        super().__init__(order, reason)
        self.order, self.reason = order, reason


class Recorder:
    """Counts how often each step body really ran (thread-safe)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def hit(self, key: str) -> None:
        with self.lock:
            self.calls[key] = self.calls.get(key, 0) + 1


_open_apps: list[App] = []


def make_app(url: str, **kw: Any) -> App:
    app = App("engine", database_url=url, poll_interval=0.02, lease_seconds=2, **kw)
    _open_apps.append(app)
    return app


@pytest.fixture(autouse=True)
def _close_apps() -> Iterator[None]:
    """Close every App a test made: an unclosed connection pool is collected on some other
    thread later, where it cannot shut down cleanly."""
    yield
    while _open_apps:
        _open_apps.pop().close()


@pytest.fixture
def app(database_url: str) -> App:
    return make_app(database_url)


def test_delay_runs_the_task_and_get_returns_its_value(app: App) -> None:
    @app.task
    def add(x: int, y: int) -> int:
        return x + y

    assert add.name == "tests.integration.test_engine.add"
    assert add(2, 3) == 5  # calling the task runs it here, as in Celery
    handle = add.delay(2, 3)
    assert handle.status == "ENQUEUED" and not handle.ready()
    with running_worker(app):
        assert handle.get(timeout=20) == 5
    assert handle.ready() and handle.successful() and handle.status == "SUCCESS"
    # Any process can look the task up by id.
    other = Client(app.settings.database_url)
    assert other.AsyncResult(handle.id).get(timeout=1) == 5
    other.close()


def test_reusing_a_task_id_returns_the_existing_task(app: App) -> None:
    seen = Recorder()

    @app.task
    def once(x: int) -> int:
        seen.hit("once")
        return x

    first = once.apply_async((1,), task_id="fixed-id")
    second = once.apply_async((2,), task_id="fixed-id")
    assert first.id == second.id == "fixed-id"
    with running_worker(app):
        assert second.get(timeout=20) == 1
    assert seen.calls == {"once": 1}
    assert len(app.list_tasks()) == 1


def test_deduplication_refuses_or_returns_the_holder(app: App) -> None:
    @app.task
    def job() -> None:
        return None

    held = job.apply_async(deduplication_id="nightly")
    with pytest.raises(pgtasks.DuplicateTaskError, match="nightly") as info:
        job.apply_async(deduplication_id="nightly")
    assert info.value.existing_task_id == held.id
    assert job.apply_async(deduplication_id="nightly", on_duplicate="return").id == held.id
    with running_worker(app):
        held.get(timeout=20)
    assert job.apply_async(deduplication_id="nightly").id != held.id


def test_countdown_keeps_the_task_delayed_in_the_database(app: App) -> None:
    @app.task
    def later() -> str:
        return "done"

    handle = later.apply_async(countdown=3600)
    soon = later.apply_async(eta=dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1))
    assert handle.status == "DELAYED" and soon.status == "DELAYED"
    with running_worker(app):
        assert soon.get(timeout=20) == "done"
    assert handle.status == "DELAYED"


def test_errors_come_back_as_their_own_types(app: App) -> None:
    @app.task
    def decline(order: int) -> None:
        raise PaymentDeclined(order, "insufficient funds")

    @app.task
    def broken() -> None:
        raise KeyError("missing")

    with running_worker(app):
        declined, missing = decline.delay(7), broken.delay()
        with pytest.raises(PaymentDeclined) as info:
            declined.get(timeout=20)
        with pytest.raises(KeyError, match="missing"):
            missing.get(timeout=20)
    assert info.value.order == 7 and info.value.reason == "insufficient funds"
    assert "raise PaymentDeclined" in info.value.remote_traceback  # type: ignore[attr-defined]
    assert declined.failed() and declined.status == "ERROR"


def test_unknown_task_name_and_bad_inputs_fail_with_a_clear_error(app: App) -> None:
    client = Client(app.settings.database_url)
    unknown = client.enqueue("nobody.defines.this", [1])
    with running_worker(app), pytest.raises(pgtasks.TaskNotRegistered, match=r"nobody\.defines\.this"):
        unknown.get(timeout=20)
    client.close()


@pytest.mark.parametrize(
    ("inputs", "tag", "message"),
    [
        ("{not json", "json", "cannot be deserialized as json"),
        ('{"args": 1}', "json", "malformed"),
        ('{"args": [], "kwargs": {}}', "msgpack", "unknown serialization tag 'msgpack'"),
        ("gASVAgAAAAAAAABLAS4=", "pickle", "does not accept"),
    ],
)
def test_rows_whose_inputs_cannot_be_read_fail_with_a_reason(
    app: App, inputs: str, tag: str, message: str
) -> None:
    @app.task
    def fine() -> str:
        return "fine"

    poison = NewTask(task_id="poison", name=fine.name, inputs=inputs, serialization=tag, queue_name="default")
    app.engine.database.sysdb.tasks_enqueue([poison])
    healthy = fine.delay()
    with running_worker(app):
        assert healthy.get(timeout=20) == "fine"  # the worker keeps serving other tasks
        with pytest.raises(pgtasks.SerializationError, match=message):
            app.AsyncResult("poison").get(timeout=20)
    assert app.AsyncResult("poison").status == "ERROR"


def test_values_json_cannot_carry_fail_at_enqueue(app: App) -> None:
    @app.task
    def takes(x: object, when: object = None) -> None:
        return None

    with pytest.raises(pgtasks.SerializationError, match="argument 0 of task"):
        takes.delay(object())
    with pytest.raises(pgtasks.SerializationError, match="keyword argument 'when'"):
        takes.delay(1, when={1, 2})
    assert app.list_tasks() == []


def test_rich_json_values_round_trip(app: App) -> None:
    @app.task
    def echo(value: Any) -> Any:
        return value

    value = {
        "at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
        "id": uuid.UUID(int=5),
        "raw": b"\x00\xff",
        "pair": (1, 2),
    }
    with running_worker(app):
        got = echo.delay(value).get(timeout=20)
    assert got == {**value, "pair": [1, 2]}


def test_pickle_only_when_the_app_opts_in(database_url: str) -> None:
    app = make_app(database_url, serializer="pickle", accept_content=("json", "pickle"))

    @app.task
    def echo(value: Any) -> Any:
        return value

    with running_worker(app):
        assert echo.delay({1, 2, 3}).get(timeout=20) == {1, 2, 3}
    json_only = make_app(database_url)
    record = json_only.engine.get_task(app.list_tasks()[0].task_id)
    assert record is not None
    with pytest.raises(pgtasks.SerializationError, match="does not accept"):
        json_only.engine.result_of(record)


def test_steps_run_once_and_replay_from_checkpoints(app: App) -> None:
    seen = Recorder()

    @app.step
    def fetch(order: int) -> dict[str, int]:
        seen.hit("fetch")
        return {"order": order, "qty": 2}

    @app.step
    def price(qty: int) -> float:
        seen.hit("price")
        return qty * 2.5

    @app.task
    def checkout(order: int) -> float:
        info = fetch(order)
        return price(info["qty"])

    with running_worker(app):
        handle = checkout.delay(11)
        assert handle.get(timeout=20) == 5.0
    info = app.get_task(handle.id)
    assert info is not None
    assert [(s.function_id, s.function_name) for s in info.steps] == [
        (1, fetch.__qualname__),
        (2, price.__qualname__),
    ]
    assert seen.calls == {"fetch": 1, "price": 1}
    # A fork from step 2 reuses step 1's checkpoint and runs step 2 again on current code.
    forked = app.fork_task(handle.id, start_step=2)
    with running_worker(app):
        assert app.AsyncResult(forked).get(timeout=20) == 5.0
    assert seen.calls == {"fetch": 1, "price": 2}
    assert fetch(3) == {"order": 3, "qty": 2}  # outside a task a step is a plain call


class Size(enum.IntEnum):
    SMALL = 1


def test_a_step_returns_on_its_first_run_what_its_replay_returns(app: App) -> None:
    """JSON gives back an int for an IntEnum and a list for a tuple: the first run sees those
    too, and the values JSON keeps as they are come back equal, with their own types; a run
    that replays every step from its checkpoint sees the same."""
    returned = [Size.SMALL, (1, "a"), 7, "text", None, 2.5, True]
    ran = Recorder()

    @app.step
    def echo(value: Any) -> Any:
        ran.hit("echo")
        return value

    @app.task
    def values_seen() -> list[Any]:
        return [[type(seen).__name__, seen] for seen in map(echo, returned)]

    with running_worker(app):
        handle = values_seen.delay()
        seen = handle.get(timeout=20)
        # A fork from past the last step replays all of them from the first run's checkpoints.
        replayed = app.AsyncResult(app.fork_task(handle.id, start_step=len(returned) + 1)).get(timeout=20)
    assert ran.calls == {"echo": len(returned)}
    assert replayed == seen
    assert seen == [
        ["int", 1],
        ["list", [1, "a"]],
        ["int", 7],
        ["str", "text"],
        ["NoneType", None],
        ["float", 2.5],
        ["bool", True],
    ]


def test_step_retries_with_backoff_then_records_the_failure(app: App) -> None:
    seen = Recorder()

    @app.step(retries=2, backoff=0.01)
    def flaky(n: int) -> str:
        seen.hit(f"flaky{n}")
        if seen.calls[f"flaky{n}"] < 3:
            raise ConnectionError("transient")
        return "ok"

    @app.step(retries=1, backoff=0.01)
    def hopeless() -> None:
        seen.hit("hopeless")
        raise ValueError("never works")

    @app.task
    def run() -> str:
        first = flaky(1)
        try:
            hopeless()
        except ValueError:
            return first + "+handled"
        return first

    with running_worker(app):
        handle = run.delay()
        assert handle.get(timeout=20) == "ok+handled"
    assert seen.calls == {"flaky1": 3, "hopeless": 2}
    info = app.get_task(handle.id)
    assert info is not None and info.steps[1].error is not None and "never works" in info.steps[1].error


def test_cancel_stops_a_running_task_at_its_next_step(app: App) -> None:
    seen = Recorder()
    entered, release = threading.Event(), threading.Event()

    @app.step
    def first() -> None:
        seen.hit("first")
        entered.set()
        release.wait(20)

    @app.step
    def second() -> None:
        seen.hit("second")

    @app.task
    def long_task() -> str:
        first()
        second()
        return "finished"

    with running_worker(app):
        handle = long_task.delay()
        assert entered.wait(20)
        assert app.cancel_task(handle.id)
        release.set()
        with pytest.raises(pgtasks.TaskCancelled):
            handle.get(timeout=20)
    assert seen.calls == {"first": 1}
    assert handle.status == "CANCELLED"
    waiting = long_task.delay()
    assert app.cancel_task(waiting.id) and not app.cancel_task(waiting.id)
    # first() finished after the cancel: its checkpoint is kept, and resume continues from it.
    assert app.resume_task(handle.id)
    entered.clear()
    with running_worker(app):
        assert handle.get(timeout=20) == "finished"
    assert seen.calls == {"first": 1, "second": 1}


def test_child_tasks_sent_from_a_task_get_deterministic_ids(app: App) -> None:
    @app.task
    def child(n: int) -> int:
        return n * 10

    @app.task
    def parent() -> list[str]:
        return [child.delay(i).id for i in range(3)]

    with running_worker(app):
        handle = parent.delay()
        ids = handle.get(timeout=20)
        assert [app.AsyncResult(i).get(timeout=20) for i in ids] == [0, 10, 20]
    kids = [app.engine.get_task(i) for i in ids]
    assert all(k is not None and k.parent_task_id == handle.id for k in kids)
    # Re-running the parent's body sends the same ids, so no child runs twice.
    record = app.engine.get_task(handle.id)
    assert record is not None
    again = execute_task(app.engine, record, "replayer")
    assert (
        again is not None and again.output is not None and app.engine.codec.loads("json", again.output) == ids
    )


def test_two_executors_on_one_task_only_the_owner_records(app: App) -> None:
    seen = Recorder()

    @app.step
    def work(label: str) -> str:
        seen.hit(label)
        return label

    @app.task
    def task() -> str:
        return work("a") + work("b")

    handle = task.delay()
    db = app.engine.database.sysdb
    version = app.version()
    [first] = db.tasks_claim(ClaimParams("w1", version, ("default",), 1))
    # w1's lease expires: the task is recovered and w2 claims it, while w1 still has it. (A
    # lease outlives the ownership window in which a fresh claim stands for an ownership read:
    # w1's claim is older than that by the time it starts.)
    first = dataclasses.replace(first, claimed_at=time.monotonic() - 60)
    db.tasks_recover_stale(RecoverStaleParams(lease_ms=0))
    [second] = db.tasks_claim(ClaimParams("w2", version, ("default",), 1))
    assert execute_task(app.engine, first, "w1") is None  # abandoned, nothing recorded
    outcome = execute_task(app.engine, second, "w2")
    assert outcome is not None and outcome.status is Status.SUCCESS
    steps = db.steps_get(handle.id)
    assert [(s.function_id, s.executor_id) for s in steps] == [(1, "w2"), (2, "w2")]
    assert seen.calls == {"a": 1, "b": 1}


def _one_step_task_counting_reads(app: App, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[str]]:
    """A task of one step, and the ids of the ownership reads made from now on."""

    @app.step
    def work() -> int:
        return 1

    @app.task
    def task() -> int:
        return work()

    db = app.engine.database.sysdb
    reads: list[str] = []
    read = db.task_owned_by

    def counted(task_id: str, executor_id: str, claim_token: str | None = None) -> bool:
        reads.append(task_id)
        return read(task_id, executor_id, claim_token)

    monkeypatch.setattr(db, "task_owned_by", counted)
    return task, reads


def test_a_fresh_claim_stands_for_the_first_steps_ownership_read(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim's commit proves the task runs here: a step that starts within the ownership
    window after it reads nothing more; one that starts later reads its ownership first."""

    task, reads = _one_step_task_counting_reads(app, monkeypatch)
    db = app.engine.database.sysdb
    # A window wide enough that a loaded machine cannot age the fresh claim past it.
    monkeypatch.setattr(steps_module, "OWNERSHIP_FRESH_SECONDS", 30.0)
    fresh, late = task.delay(), task.delay()
    claimed = db.tasks_claim(ClaimParams("w1", app.version(), ("default",), 2))
    by_id = {r.task_id: r for r in claimed}
    assert by_id[fresh.id].claimed_at is not None
    outcome = execute_task(app.engine, by_id[fresh.id], "w1")
    assert outcome is not None and outcome.status is Status.SUCCESS and reads == []
    old = dataclasses.replace(by_id[late.id], claimed_at=time.monotonic() - 60)
    outcome = execute_task(app.engine, old, "w1")
    assert outcome is not None and outcome.status is Status.SUCCESS and reads == [late.id]


def test_a_held_tasks_check_before_it_starts_stands_for_the_first_steps_read(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task held past the claim's window is checked before it starts (the pools' held
    check): confirmed, it starts as freshly claimed and its first step reads nothing more;
    revoked meanwhile, it does not start."""
    from pgtasks.worker.held import checked_to_run

    task, reads = _one_step_task_counting_reads(app, monkeypatch)
    db = app.engine.database.sysdb
    monkeypatch.setattr(steps_module, "OWNERSHIP_FRESH_SECONDS", 30.0)  # a loaded machine's margin
    held, revoked = task.delay(), task.delay()
    claimed = {r.task_id: r for r in db.tasks_claim(ClaimParams("w1", app.version(), ("default",), 2))}
    stale = dataclasses.replace(claimed[held.id], claimed_at=time.monotonic() - 60)
    checked = checked_to_run(app.engine, stale, "w1")
    assert checked is not None and reads == [held.id]  # the check's own read
    assert checked.claimed_at is not None and checked.claimed_at > time.monotonic() - 30
    outcome = execute_task(app.engine, checked, "w1")
    assert outcome is not None and outcome.status is Status.SUCCESS and reads == [held.id]  # no second
    app.engine.admin.cancel(revoked.id)
    assert checked_to_run(app.engine, claimed[revoked.id], "w1") is None


def test_nondeterministic_body_is_reported(app: App) -> None:
    flip = {"value": True}

    @app.step
    def one() -> int:
        return 1

    @app.step
    def two() -> int:
        return 2

    @app.task
    def wobbly() -> int:
        return one() if flip["value"] else two()

    handle = wobbly.delay()
    db = app.engine.database.sysdb
    [record] = db.tasks_claim(ClaimParams("w1", app.version(), ("default",), 1))
    assert execute_task(app.engine, record, "w1") is not None
    flip["value"] = False
    outcome = execute_task(app.engine, record, "w1")
    assert outcome is not None and outcome.status is Status.ERROR
    assert "NonDeterminismError" in (outcome.error or "")
    assert handle.id == record.task_id


def test_list_tasks_filters(app: App) -> None:
    @app.task(queue="mail")
    def send() -> None:
        return None

    @app.task
    def other() -> None:
        return None

    send.delay(), send.delay(), other.delay()
    assert len(app.list_tasks(queue="mail")) == 2
    assert len(app.list_tasks(name=other.name)) == 1
    assert len(app.list_tasks(status="ENQUEUED")) == 3
    assert app.list_tasks(status=[Status.SUCCESS]) == []
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    assert app.list_tasks(created_after=future) == []
    with running_worker(app, queues=("default", "mail")):
        wait_for(lambda: len(app.list_tasks(status="SUCCESS")) == 3, what="all three tasks")


def test_a_base_exception_in_a_task_fails_it_without_leaking_the_slot(app: App) -> None:
    import asyncio

    @app.task
    def cancelled() -> None:
        raise asyncio.CancelledError("from a library")

    @app.task
    def after() -> str:
        return "ran"

    with running_worker(app, concurrency=1):
        bad = cancelled.delay()
        with pytest.raises(pgtasks.TaskError, match="CancelledError: from a library"):
            bad.get(timeout=20)
        assert after.delay().get(timeout=20) == "ran"


def test_management_refuses_bad_input_clearly(app: App) -> None:
    @app.task
    def job() -> None:
        return None

    handle = job.delay()
    with pytest.raises(pgtasks.ConfigurationError, match="no task with id 'nope' to fork"):
        app.fork_task("nope")
    with pytest.raises(pgtasks.ConfigurationError, match="exists already"):
        app.fork_task(handle.id, new_task_id=handle.id)
    with pytest.raises(pgtasks.ConfigurationError, match="start_step"):
        app.fork_task(handle.id, start_step="2")  # type: ignore[arg-type]
    with pytest.raises(pgtasks.ConfigurationError, match="unknown status 'running'; one of ENQUEUED"):
        app.list_tasks(status="running")
    with pytest.raises(pgtasks.ConfigurationError, match="limit"):
        app.list_tasks(limit=-1)
    assert [t.task_id for t in app.list_tasks(status="enqueued")] == [handle.id]


def test_a_task_that_asks_to_retry_runs_again_under_its_id_from_scratch(app: App) -> None:
    seen = Recorder()

    @app.step
    def charge() -> str:
        seen.hit("charge")
        return "charged"

    @app.task
    def flaky() -> tuple[str, int]:
        ctx = pgtasks.current_task()
        assert ctx is not None
        charged = charge()
        if ctx.retries < 2:
            raise pgtasks.RetryRequested(countdown=0, reason=ConnectionError("gateway down"))
        return charged, ctx.retries

    with running_worker(app):
        handle = flaky.delay()
        assert handle.get(timeout=20) == ["charged", 2]
    assert seen.calls == {"charge": 3}  # a retry starts over: its checkpoints are dropped
    record = app.engine.get_task(handle.id)
    assert record is not None and record.retries == 2 and record.error is None


def test_a_retry_with_a_countdown_waits_delayed_with_its_reason(app: App) -> None:
    @app.task
    def later() -> None:
        raise pgtasks.RetryRequested(countdown=3600, reason=ValueError("not yet"))

    with running_worker(app):
        handle = later.delay()
        wait_for(lambda: handle.status == "DELAYED", what="the retry to be scheduled")
    record = app.engine.get_task(handle.id)
    assert record is not None and record.retries == 1 and "not yet" in (record.error or "")
    with pytest.raises(pgtasks.ConfigurationError, match="countdown"):
        pgtasks.RetryRequested(countdown=-1)


def test_a_retry_moves_to_the_queue_and_priority_it_gives(app: App) -> None:
    """``RetryRequested(queue=, priority=)`` runs the next attempt there. Moved to another
    queue the task leaves its deduplication id behind (unique per queue): a waiting task with
    the same id on that queue does not make the outcome fail."""

    @app.task
    def moving() -> tuple[str, int]:
        ctx = pgtasks.current_task()
        assert ctx is not None
        if ctx.retries == 0:
            raise pgtasks.RetryRequested(queue="later", priority=5)
        return ctx.queue_name, ctx.priority

    @app.task(queue="later")
    def waiting() -> None:
        return None

    blocker = waiting.apply_async(deduplication_id="nightly")
    with running_worker(app):  # "default" only
        handle = moving.apply_async(deduplication_id="nightly")
        wait_for(
            lambda: (r := app.engine.get_task(handle.id)) is not None and r.retries == 1, what="the retry"
        )
    record = app.engine.get_task(handle.id)
    assert record is not None and record.status == Status.ENQUEUED
    assert record.queue_name == "later" and record.priority == 5
    assert record.deduplication_id is None
    with running_worker(app, queues=("later",)):
        assert handle.get(timeout=20) == ["later", 5]
        assert blocker.get(timeout=20) is None


def test_a_retry_to_a_queue_no_name_can_be_fails_the_task_saying_why(app: App) -> None:
    @app.task
    def moving() -> None:
        raise pgtasks.RetryRequested(queue="no such queue")

    @app.task
    def reprioritised() -> None:
        raise pgtasks.RetryRequested(priority=1.5)  # type: ignore[arg-type]

    with running_worker(app):
        handle, other = moving.delay(), reprioritised.delay()
        with pytest.raises(pgtasks.ConfigurationError, match="invalid queue name 'no such queue'"):
            handle.get(timeout=20)
        with pytest.raises(pgtasks.ConfigurationError, match=r"priority must be an integer, not 1\.5"):
            other.get(timeout=20)


def test_the_expired_hook_hears_each_task_this_process_ended_as_expired(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    """``worker_api.on_expired`` is told the ids of the tasks ended as expired, once each: the
    waiting ones the maintenance round cancels and a held one the check before its start
    ends (what a Celery app's worker sends ``task_revoked`` from); a hook that raises is
    logged, and the expiry stands."""
    from pgtasks.worker.held import checked_to_run

    @app.task
    def task() -> int:
        return 1

    api = app.engine.worker_api
    told: list[list[str]] = []
    api.on_expired = told.append
    waiting, held = task.apply_async(expires=2.0), task.apply_async(expires=2.0)
    db = app.engine.database.sysdb
    claimed = db.tasks_claim(ClaimParams("w1", app.version(), ("default",), 1))
    assert [r.task_id for r in claimed] == [waiting.id]  # claimed before its expiry: held
    record = db.task_get(held.id)
    assert record is not None and record.expires_at_epoch_ms is not None
    expires = record.expires_at_epoch_ms
    wait_for(lambda: api.now_ms() > expires + 100, timeout=30, what="the expiries to pass")
    assert api.expire() == [held.id] and told == [[held.id]]
    assert api.expire() == [] and told == [[held.id]]

    def faulty(task_ids: list[str]) -> None:
        raise RuntimeError("hook bug")

    api.on_expired = faulty
    stale = dataclasses.replace(claimed[0], claimed_at=time.monotonic() - 60)
    assert checked_to_run(app.engine, stale, "w1") is None  # ended as expired, not started
    assert "the expired hook failed for tasks " + waiting.id in caplog.text
    ended = db.task_get(waiting.id)
    assert ended is not None and ended.status is Status.CANCELLED
