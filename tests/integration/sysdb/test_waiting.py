"""Conformance of the system database, on PostgreSQL and SQLite: durable waiting (sleeps,
messages, events, streams; sysdb/waiting.py)."""

from __future__ import annotations

import pytest

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import (
    CompleteParams,
    ForkParams,
    MessageParams,
    Outcome,
    Status,
    StepRecord,
    StepWrite,
    WaitParams,
    WaitState,
)
from tests.integration.sysdb.support import claim, new


def _running(sysdb: SystemDatabase, task_id: str = "a") -> None:
    sysdb.tasks_enqueue([new(task_id)])
    assert claim(sysdb) == [task_id]


def _step(fid: int, name: str = "pgtasks.recv", task_id: str = "a") -> StepRecord:
    return StepRecord(task_id, fid, name, None, None, executor_id="w1")


def _look(sysdb: SystemDatabase, deadline_in_ms: int, hold_ms: int = 500, **what: object) -> WaitParams:
    now = sysdb.now_ms()
    return WaitParams("a", "w1", None, now + deadline_in_ms, hold_ms, **what)  # type: ignore[arg-type]


def _message(destination: str, text: str, topic: str = "t", key: str | None = None) -> MessageParams:
    return MessageParams(f"{destination}:{key or text}", destination, topic, f'"{text}"')


def test_a_deadline_is_recorded_in_database_time_and_fenced(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    before = sysdb.now_ms()
    recorded = sysdb.wait_deadline(_step(1, "pgtasks.sleep"), 5_000)
    assert recorded.state is WaitState.WAIT
    assert before + 5_000 <= recorded.wake_at_ms <= sysdb.now_ms() + 5_000
    assert sysdb.steps_get("a")[0].output == str(recorded.wake_at_ms)
    foreign = StepRecord("a", 2, "pgtasks.sleep", None, None, executor_id="w2")
    assert sysdb.wait_deadline(foreign, 1).state is WaitState.ABANDONED
    short = sysdb.wait_deadline(_step(2, "pgtasks.sleep"), 400, suspend_over_ms=500)
    assert short.state is WaitState.WAIT  # short enough to wait in place
    long = sysdb.wait_deadline(_step(3, "pgtasks.sleep"), 60_000, suspend_over_ms=500)
    assert long.state is WaitState.SUSPENDED  # the step and the suspension: one transaction
    record = sysdb.task_get("a")
    assert record is not None and record.status is Status.DELAYED
    assert record.delay_until_epoch_ms == long.wake_at_ms and record.wait_for is None


def test_a_long_wait_suspends_the_task_and_a_short_one_waits_in_place(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    short = sysdb.task_wait(_look(sysdb, 300))
    assert short.state is WaitState.WAIT and 0 < short.remaining_ms <= 300
    assert sysdb.task_wait(_look(sysdb, -1)).state is WaitState.DONE  # past: done at once
    params = _look(sysdb, 60_000)
    assert sysdb.task_wait(params).state is WaitState.SUSPENDED
    record = sysdb.task_get("a")
    assert record is not None and record.status is Status.DELAYED and record.executor_id is None
    assert record.delay_until_epoch_ms == params.deadline_ms and record.recovery_attempts == 0
    assert sysdb.task_wait(params).state is WaitState.ABANDONED  # no longer this run's


def test_a_message_is_received_once_oldest_first_and_sent_once_per_key(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    assert sysdb.message_send(_message("a", "one", key="k"))
    assert not sysdb.message_send(_message("a", "one again", key="k"))  # same key: nothing sent
    assert sysdb.message_send(_message("a", "two"))
    assert sysdb.message_send(_message("a", "other", topic="u"))
    with pytest.raises(LookupError):
        sysdb.message_send(_message("nobody", "x"))
    got = [sysdb.task_wait(_look(sysdb, 60_000, step=_step(i), topic="t")) for i in (1, 2)]
    assert [(r.state, r.output) for r in got] == [(WaitState.DONE, '"one"'), (WaitState.DONE, '"two"')]
    assert [s.output for s in sysdb.steps_get("a")] == ['"one"', '"two"']  # recorded with them
    shown = [(m.topic, m.message, m.consumed) for m in sysdb.messages_of("a")]
    assert shown == [("t", '"one"', True), ("t", '"two"', True), ("u", '"other"', False)]
    timed_out = sysdb.task_wait(_look(sysdb, -1, step=_step(3), topic="t"))
    assert (timed_out.state, timed_out.output) == (WaitState.DONE, None)


def test_a_message_wakes_its_suspended_receiver(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    waiting = sysdb.task_wait(_look(sysdb, 60_000, step=_step(1), topic="t"))
    assert waiting.state is WaitState.SUSPENDED
    sysdb.message_send(_message("a", "other topic", topic="u"))
    record = sysdb.task_get("a")
    assert record is not None and record.status is Status.DELAYED  # not what it waits for
    sysdb.message_send(_message("a", "hello"))
    record = sysdb.task_get("a")
    assert record is not None and record.status is Status.ENQUEUED and record.delay_until_epoch_ms is None


def test_an_event_keeps_its_history_and_wakes_its_waiters(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    sysdb.tasks_enqueue([new("b")])
    assert claim(sysdb, executor="w1") == ["b"]
    waiter = WaitParams("b", "w1", None, sysdb.now_ms() + 60_000, 500, _step(1, "e", "b"), None, "a", "k")
    assert sysdb.task_wait(waiter).state is WaitState.SUSPENDED
    listener = sysdb.open_event_listener()  # get_event outside a task: LISTEN, where it can
    target = sysdb.target
    pooled = target.transaction_pooling and not target.listen_dsn  # LISTEN would lose notifications
    assert (listener is not None) == (target.dialect == "postgres" and not pooled)
    assert sysdb.event_publish(_step(1, "pgtasks.set_event"), "k", "1", "json") is StepWrite.RECORDED
    if listener is not None:
        assert listener.wait(10) == {"a"}  # the id of the task that set it
        listener.close()
    assert sysdb.event_publish(_step(2, "pgtasks.set_event"), "k", "2", "json") is StepWrite.RECORDED
    assert sysdb.task_event_get("a", "k") == ("json", "2")
    assert [(e.key, e.value, e.function_id) for e in sysdb.events_of("a")] == [("k", "1", 1), ("k", "2", 2)]
    woken = sysdb.task_get("b")
    assert woken is not None and woken.status is Status.ENQUEUED
    assert claim(sysdb, executor="w1") == ["b"]
    found = sysdb.task_wait(waiter)
    assert (found.state, found.output) == (WaitState.DONE, "2")
    foreign = StepRecord("a", 3, "pgtasks.set_event", None, None, executor_id="w2")
    assert sysdb.event_publish(foreign, "k", "3", "json") is StepWrite.NOT_OWNER
    assert sysdb.task_event_get("a", "k") == ("json", "2")


def test_a_stream_is_read_in_order_from_a_position_and_closed(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    for fid, value in ((1, "10"), (2, "20"), (3, None)):
        assert (
            sysdb.stream_write(_step(fid, "pgtasks.write_stream"), "s", value, "json") is StepWrite.RECORDED
        )
    assert sysdb.stream_write(_step(2, "pgtasks.write_stream"), "s", "20", "json") is StepWrite.RECORDED
    entries = sysdb.stream_read("a", "s", 0, 10)
    assert [(e.position, e.value) for e in entries] == [(0, "10"), (1, "20"), (2, None)]  # a retry: once
    assert [e.position for e in sysdb.stream_read("a", "s", 1, 1)] == [1]
    assert sysdb.stream_read("a", "other", 0, 10) == []


def test_a_fork_sees_what_its_original_received_and_forgetting_deletes_it_all(sysdb: SystemDatabase) -> None:
    _running(sysdb)
    sysdb.message_send(_message("a", "one"))
    sysdb.message_send(_message("a", "two"))
    assert sysdb.task_wait(_look(sysdb, 60_000, step=_step(1), topic="t")).output == '"one"'
    assert sysdb.task_wait(_look(sysdb, 60_000, step=_step(2), topic="t")).output == '"two"'
    sysdb.event_publish(_step(3, "pgtasks.set_event"), "k", "1", "json")
    sysdb.stream_write(_step(4, "pgtasks.write_stream"), "s", "1", "json")
    # Forked before its second receive: the fork replays the first message it received and
    # waits for a message of its own for the second (the original's is not its to consume).
    fork = sysdb.task_fork(ForkParams("a", "f", start_step=2))
    assert [(s.function_id, s.output) for s in sysdb.steps_get(fork.task_id)] == [(1, '"one"')]
    assert sysdb.messages_of("f") == []
    assert sysdb.tasks_complete(CompleteParams("w1", (Outcome("a", Status.SUCCESS, output="1"),))) == ["a"]
    assert sysdb.task_forget("a")
    for gone in (sysdb.messages_of("a"), sysdb.events_of("a"), sysdb.stream_read("a", "s", 0, 10)):
        assert gone == []
    assert sysdb.task_event_get("a", "k") is None
