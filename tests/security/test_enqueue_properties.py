"""Property tests of enqueue options: every input is either accepted and read back as given,
or refused with an error that names the option, and a refused call writes nothing.

Each property has an oracle (``*_verdict``) written from the documented rules, not from the
code, so a value accepted that should not be (or the reverse) fails the test. Most run on
SQLite; ``test_mixed_options_on_postgres`` runs them together on PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pgtasks import App, DuplicateTaskError, PayloadTooLarge, PgtasksError, SerializationError
from pgtasks.engine.options import MAX_DELAY_SECONDS, MAX_TASK_ID_LENGTH
from pgtasks.engine.serialization import Codec
from pgtasks.engine.settings import MAX_KEY_BYTES, MAX_NAME_CHARS
from pgtasks.sysdb.records import Status, TaskRecord
from tests.security.conftest import CAP
from tests.security.support import INJECTIONS, PROPERTY, PROPERTY_PG, refused, snapshot

NAME = "sec.job"
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
QUEUE_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:@"
SLACK_MS = 2  # the database clock is read in whole milliseconds

# -- strategies ----------------------------------------------------------------------------
any_char = st.characters(exclude_categories=())  # lone surrogates and NUL included
odd_text = st.one_of(
    st.text(any_char, max_size=40),
    st.sampled_from(INJECTIONS),
    st.text(st.sampled_from("'\";\\\x00 -"), min_size=1, max_size=12),
)
seconds = st.one_of(
    st.floats(),  # NaN, infinities, negative, huge
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([0, -0.0, 1e-9, 0.0004, 0.0006, 1.5, MAX_DELAY_SECONDS, MAX_DELAY_SECONDS + 1, 10**400]),
    st.sampled_from([True, "5", None, dt.timedelta(seconds=5)]),
)
datetimes = st.one_of(
    st.datetimes(timezones=st.none() | st.timezones()),
    st.sampled_from(
        [
            dt.datetime.min,
            dt.datetime.max,
            dt.datetime.min.replace(tzinfo=dt.timezone(dt.timedelta(hours=14))),
            dt.datetime.max.replace(tzinfo=dt.timezone(-dt.timedelta(hours=23, minutes=59))),
            dt.datetime(2038, 1, 19, 3, 14, 8),
        ]
    ),
)
priorities = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**31) - 2, max_value=-(2**31) + 2),
    st.integers(min_value=2**31 - 2, max_value=2**31 + 2),
    st.sampled_from([True, 1.0, "1", None]),
)
queues = st.one_of(
    st.text(any_char, max_size=30),
    st.text(st.sampled_from(QUEUE_ALPHABET), min_size=1, max_size=260),
    st.sampled_from(INJECTIONS),
    st.sampled_from(["q" * 64, "q" * 200, "q" * 201, "é" * 40, "ユニコード", "a b", ""]),
)
names = st.one_of(odd_text, st.text(any_char, min_size=200, max_size=300))
task_ids = st.one_of(
    odd_text,
    st.text(st.sampled_from("ab'\""), min_size=MAX_TASK_ID_LENGTH - 2, max_size=MAX_TASK_ID_LENGTH + 2),
    st.sampled_from([5, b"id", None]),
)
keys = st.one_of(
    odd_text,
    st.sampled_from([5, b"key"]),
    st.text(st.sampled_from("ké"), min_size=MAX_KEY_BYTES // 2 - 5, max_size=MAX_KEY_BYTES + 5),
)
arguments = st.one_of(
    st.text(any_char, max_size=20),
    st.binary(max_size=20),
    st.integers(),
    st.floats(),
    st.integers(min_value=0, max_value=2 * CAP).map(lambda n: "x" * n),
    st.integers(min_value=0, max_value=CAP // 3).map(lambda n: "é" * n),  # 6 bytes each in JSON
    st.integers(min_value=0, max_value=CAP).map(lambda n: bytes(n)),
)


# -- oracles: (accepted?, a word the error must contain) -----------------------------------
def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def seconds_verdict(value: object, what: str) -> tuple[bool, str]:
    if value is None:
        return True, what
    if not is_number(value):
        return False, what
    if isinstance(value, float) and not math.isfinite(value):
        return False, what
    return 0 <= value <= MAX_DELAY_SECONDS, what  # type: ignore[operator]


def datetime_verdict(value: object, what: str) -> tuple[bool, str]:
    """A datetime at most a century (MAX_DELAY_SECONDS) from now, as a countdown; within a
    minute of that bound the clock decides, so such a draw is skipped."""
    if not isinstance(value, dt.datetime):
        return False, what
    ahead_ms = exact_ms(value) - time.time() * 1000
    assume(abs(ahead_ms - MAX_DELAY_SECONDS * 1000) > 60_000)
    return ahead_ms <= MAX_DELAY_SECONDS * 1000, what


def text_ok(value: object) -> bool:
    """A string PostgreSQL and SQLite both store verbatim: no NUL, no lone surrogate."""
    return (
        isinstance(value, str) and "\x00" not in value and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    )


def key_ok(value: object) -> bool:
    """A deduplication id or partition key: stored verbatim, at most MAX_KEY_BYTES in UTF-8."""
    return text_ok(value) and len(value.encode()) <= MAX_KEY_BYTES  # type: ignore[attr-defined]


def priority_verdict(value: object) -> tuple[bool, str]:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31, "priority"


def queue_verdict(value: object) -> tuple[bool, str]:
    ok = isinstance(value, str) and 0 < len(value) <= 200 and set(value) <= set(QUEUE_ALPHABET)
    return ok, "queue"


def name_verdict(value: object) -> tuple[bool, str]:
    return text_ok(value) and 0 < len(value) <= MAX_NAME_CHARS, "task name"  # type: ignore[arg-type]


def task_id_verdict(value: object) -> tuple[bool, str]:
    if value is None:
        return True, "task_id"
    return text_ok(value) and 0 < len(value) <= MAX_TASK_ID_LENGTH, "task_id"  # type: ignore[arg-type]


def payload_verdict(args: list[Any], kwargs: dict[str, Any]) -> tuple[bool, str]:
    # NaN and the infinities are accepted: stored as tagged values (engine/json_tags.py)
    _, text = Codec().dumps_inputs(NAME, tuple(args), kwargs)
    return len(text.encode()) <= CAP, "max_payload_bytes"


def exact_ms(instant: dt.datetime) -> float:
    """Epoch milliseconds by exact arithmetic (naive means UTC)."""
    aware = instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)
    delta = aware - EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds / 1000


# -- the round trip ------------------------------------------------------------------------
def enqueue(
    app: App, verdict: tuple[bool, str], args: Any = (), kwargs: Any = None, name: Any = NAME, **options: Any
) -> tuple[TaskRecord, int, int] | None:
    """Send one task. Refused: check the message and that nothing changed; return None.
    Accepted: check that exactly this row was added (or, for a known task id, that nothing
    changed); return the row and the database clock just before and after."""
    ok, word = verdict
    if not ok:
        refused(app, lambda: app.send_task(name, args, kwargs, **options), word)
        return None
    before = snapshot(app)
    start = app.engine.admin.now_ms()
    task_id = app.send_task(name, args, kwargs, **options).id
    end = app.engine.admin.now_ms()
    after = snapshot(app)
    if options.get("task_id") is not None:
        assert task_id == options["task_id"]
    if task_id in before:  # a re-sent task id returns the existing task, untouched
        assert after == before
        return None
    assert set(after) == {*before, task_id}
    assert all(after[k] == before[k] for k in before), "an enqueue changed another task"
    record = after[task_id]
    assert record.name == name
    stored = app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
    expected = app.engine.codec.loads_inputs(
        "json", Codec().dumps_inputs(name, tuple(args), kwargs or {})[1], name
    )
    assert repr(stored) == repr(expected)  # repr: a NaN argument equals no other NaN
    return record, start, end


def check_delay(record: TaskRecord, start: int, end: int, delay_ms_exact: float) -> None:
    """The task waits until start + delay (DELAYED), or is due at once (ENQUEUED)."""
    if record.delay_until_epoch_ms is None:
        assert record.status is Status.ENQUEUED
        assert delay_ms_exact <= 0.5  # rounds to no delay at all
    else:
        assert record.status is Status.DELAYED
        low, high = start + math.floor(delay_ms_exact), end + math.ceil(delay_ms_exact)
        assert low - SLACK_MS <= record.delay_until_epoch_ms <= high + SLACK_MS


# -- properties on SQLite ------------------------------------------------------------------
@PROPERTY
@given(countdown=seconds)
def test_countdown(sqlite_app: App, countdown: Any) -> None:
    done = enqueue(sqlite_app, seconds_verdict(countdown, "countdown"), countdown=countdown)
    if done is not None:
        record, start, end = done
        check_delay(record, start, end, 0 if countdown is None else countdown * 1000)
        if countdown is not None and countdown * 1000 >= 1:
            assert record.status is Status.DELAYED


@PROPERTY
@given(eta=st.one_of(datetimes, st.sampled_from([dt.date(2030, 1, 1), "2030-01-01", 0])))
def test_eta(sqlite_app: App, eta: Any) -> None:
    done = enqueue(sqlite_app, datetime_verdict(eta, "eta"), eta=eta)
    if done is not None:
        record, start, end = done
        due = exact_ms(eta)
        if due > end + SLACK_MS:
            assert record.status is Status.DELAYED
            assert abs(record.delay_until_epoch_ms - due) <= 1  # type: ignore[operator]
        elif due < start - SLACK_MS:
            assert record.status is Status.ENQUEUED and record.delay_until_epoch_ms is None


@PROPERTY
@given(expires=st.one_of(seconds, datetimes))
def test_expires(sqlite_app: App, expires: Any) -> None:
    verdict = (
        datetime_verdict(expires, "expires")
        if isinstance(expires, dt.datetime)
        else seconds_verdict(expires, "expires")
    )
    done = enqueue(sqlite_app, verdict, expires=expires)
    if done is not None:
        record, start, end = done
        if expires is None:
            assert record.expires_at_epoch_ms is None
        elif isinstance(expires, dt.datetime):
            assert abs(record.expires_at_epoch_ms - exact_ms(expires)) <= 1  # type: ignore[operator]
        else:
            ms = expires * 1000
            low, high = start + math.floor(ms) - SLACK_MS, end + math.ceil(ms) + SLACK_MS
            assert low <= record.expires_at_epoch_ms <= high  # type: ignore[operator]


@pytest.mark.parametrize(
    ("option", "values", "verdict", "column"),
    [("priority", priorities, priority_verdict, "priority"), ("queue", queues, queue_verdict, "queue_name")],
)
@PROPERTY
@given(data=st.data())
def test_priority_and_queue_name(
    sqlite_app: App,
    option: str,
    values: st.SearchStrategy[Any],
    verdict: Callable[[object], tuple[bool, str]],
    column: str,
    data: st.DataObject,
) -> None:
    value = data.draw(values, label=option)
    done = enqueue(sqlite_app, verdict(value), **{option: value})
    if done is not None:
        assert getattr(done[0], column) == value


@PROPERTY
@given(name=names)
def test_task_name(sqlite_app: App, name: Any) -> None:
    done = enqueue(sqlite_app, name_verdict(name), name=name)
    if done is not None:
        assert done[0].name == name
        found = sqlite_app.list_tasks(name=name, limit=1000)  # the name is a bound value
        assert done[0].task_id in {r.task_id for r in found} and {r.name for r in found} == {name}


@PROPERTY
@given(task_id=task_ids)
def test_task_id(sqlite_app: App, task_id: Any) -> None:
    done = enqueue(sqlite_app, task_id_verdict(task_id), task_id=task_id)
    if done is not None and task_id is not None:
        assert done[0].task_id == task_id
        assert sqlite_app.engine.get_task(task_id) == done[0]


@PROPERTY
@given(dedup=keys, partition=st.one_of(st.none(), keys))
def test_deduplication_id_and_partition_key(sqlite_app: App, dedup: Any, partition: Any) -> None:
    held = {r.deduplication_id for r in snapshot(sqlite_app).values()}
    ok = key_ok(dedup) and (partition is None or key_ok(partition))
    word = "deduplication_id" if not key_ok(dedup) else "partition_key"
    if ok and dedup in held:  # an unfinished task of the queue holds it already
        refused(
            sqlite_app,
            lambda: sqlite_app.send_task(NAME, deduplication_id=dedup, partition_key=partition),
            repr(dedup),
            DuplicateTaskError,
        )
        return
    done = enqueue(sqlite_app, (ok, word), deduplication_id=dedup, partition_key=partition)
    if done is not None:
        assert done[0].deduplication_id == dedup and done[0].partition_key == partition


@PROPERTY
@given(
    args=st.lists(arguments, max_size=3),
    kwargs=st.dictionaries(st.text(any_char, max_size=8), arguments, max_size=2),
)
def test_arguments_and_payload_cap(sqlite_app: App, args: list[Any], kwargs: dict[str, Any]) -> None:
    ok, word = payload_verdict(args, kwargs)
    if not ok:
        error = refused(
            sqlite_app, lambda: sqlite_app.send_task(NAME, args, kwargs), word, SerializationError
        )
        if word == "max_payload_bytes":
            assert isinstance(error, PayloadTooLarge) and error.size > CAP == error.limit
            assert repr(NAME) in str(error) and f"{error.size} bytes" in str(error)
        return
    enqueue(sqlite_app, (True, ""), args=args, kwargs=kwargs)


# -- PostgreSQL: the same rules, every option at once --------------------------------------
mixed = st.fixed_dictionaries(
    {},
    optional={
        "countdown": seconds,
        "eta": datetimes,
        "expires": st.one_of(seconds, datetimes),
        "priority": priorities,
        "queue": queues,
        "task_id": task_ids,
        "deduplication_id": keys,
    },
)


@PROPERTY_PG
@given(options=mixed, name=names, args=st.lists(arguments, max_size=2))
def test_mixed_options_on_postgres(pg_app: App, options: dict[str, Any], name: Any, args: list[Any]) -> None:
    before = snapshot(pg_app)
    # Deduplication ids are unique per queue, among tasks that hold one (unfinished tasks).
    queue = options.get("queue", "default")
    held = {r.deduplication_id for r in before.values() if r.queue_name == queue}
    verdicts = [name_verdict(name), payload_verdict(args, {})]
    for option, value in options.items():
        if option in ("countdown", "expires") and not isinstance(value, dt.datetime):
            verdicts.append(seconds_verdict(value, option))
        elif option == "deduplication_id":
            known_id = options.get("task_id") in before  # a re-sent id returns its task first
            verdicts.append((key_ok(value) and (value not in held or known_id), "deduplication_id"))
        else:
            verdicts.append(
                {
                    "eta": lambda v: datetime_verdict(v, "eta"),
                    "expires": lambda v: datetime_verdict(v, "expires"),
                    "priority": priority_verdict,
                    "queue": queue_verdict,
                    "task_id": task_id_verdict,
                }[option](value)
            )
    both = options.get("countdown") is not None and options.get("eta") is not None
    verdicts.append((not both, "countdown"))  # which of the two would win is a guess: refused
    bad = [word for ok, word in verdicts if not ok]
    if not bad:
        done = enqueue(pg_app, (True, ""), args=args, name=name, **options)
        if done is not None:
            record = done[0]
            assert record.priority == options.get("priority", 0)
            assert record.queue_name == options.get("queue", "default")
            assert record.deduplication_id == options.get("deduplication_id")
        return
    try:
        pg_app.send_task(name, args, None, **options)
    except PgtasksError as exc:
        message = str(exc).lower()
        assert any(word.lower() in message or "already queued" in message for word in bad), message
    else:
        raise AssertionError(f"accepted although {bad} should have been refused")
    assert snapshot(pg_app) == before
