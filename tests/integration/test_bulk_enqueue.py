"""A large enqueue goes to the database in chunks, in one transaction: all or nothing."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

import pgtasks
from pgtasks import App
from pgtasks.engine.core import ENQUEUE_CHUNK
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.options import SendOptions, build_new_tasks
from pgtasks.sending import send_many
from pgtasks.sysdb.records import ListTasksParams
from tests.support.apps import opened_app
from tests.support.requests import enqueue_request

COUNT = ENQUEUE_CHUNK * 2 + 7  # three chunks, the last one short


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    with opened_app("bulk", database_url) as app:
        yield app


def stored(app: App) -> int:
    return len(app.engine.admin.tasks(ListTasksParams(name="bulk.job", limit=3 * COUNT)))


def test_every_chunk_is_stored_and_ids_come_back_in_order(app: App) -> None:
    ids = [f"t{i}" for i in range(COUNT)]
    requests = [enqueue_request("bulk.job", args=(i,), task_id=t) for i, t in enumerate(ids)]
    got = app.engine.enqueue(requests)
    assert got == ids
    assert app.engine.enqueue(requests) == ids  # re-sent: found, not written twice
    assert stored(app) == COUNT
    record = app.engine.get_task(ids[-1])
    assert record is not None and app.engine.codec.loads_inputs(record.serialization, record.inputs, "x") == (
        [COUNT - 1],
        {},
    )


def test_map_enqueue_builds_no_request_per_task_and_stores_every_chunk_in_order(app: App) -> None:
    """``map_enqueue``'s path (one options object, rows built from the arguments): every
    chunk in one transaction, the ids back in the order sent, queued in that order."""
    sent = send_many(app.engine, "bulk.job", [(i,) for i in range(COUNT)], None, SendOptions(queue="mapped"))
    ids = [handle.id for handle in sent]
    assert len(set(ids)) == COUNT and stored(app) == COUNT
    records = [app.engine.get_task(task_id) for task_id in (ids[0], ids[ENQUEUE_CHUNK], ids[-1])]
    seqs = [r.enqueue_seq for r in records if r is not None and r.queue_name == "mapped"]
    assert len(seqs) == 3 and seqs == sorted(seqs)
    with pytest.raises(ConfigurationError, match="cannot share its task_id"):
        app.engine.enqueue_many("bulk.job", [(1,), (2,)], SendOptions(task_id="both"))
    last = records[-1]
    assert last is not None and app.engine.codec.loads_inputs(last.serialization, last.inputs, "x") == (
        [COUNT - 1],
        {},
    )


def test_a_last_chunk_of_one_task_is_stored_with_the_others(database_url: str) -> None:
    """The chunks share one transaction: a last chunk of a single task is inserted there like
    the others, on sessions that never sent that one-task statement before (a fresh app)."""
    with opened_app("bulk", database_url) as fresh:
        sent = send_many(
            fresh.engine, "bulk.job", [(i,) for i in range(ENQUEUE_CHUNK + 1)], None, SendOptions()
        )
        assert len({handle.id for handle in sent}) == ENQUEUE_CHUNK + 1
        assert stored(fresh) == ENQUEUE_CHUNK + 1


def test_a_duplicate_across_chunks_is_found_like_one_in_the_same_chunk(app: App) -> None:
    requests = [enqueue_request("bulk.job") for _ in range(COUNT)]
    requests[-1] = enqueue_request("bulk.job", deduplication_id="once")
    requests[0] = enqueue_request("bulk.job", deduplication_id="once")
    got = app.engine.enqueue(requests, on_duplicate="return")
    assert got[-1] == got[0]  # the last chunk's task found the first chunk's holder
    assert stored(app) == COUNT - 1
    with pytest.raises(pgtasks.DuplicateTaskError, match="'once'"):
        app.engine.enqueue(requests)


def test_a_bad_request_in_a_later_chunk_stores_nothing(app: App) -> None:
    requests = [enqueue_request("bulk.job") for _ in range(COUNT)]
    requests[-1] = enqueue_request("bulk.job", countdown=-1)
    with pytest.raises(ConfigurationError, match="countdown"):
        app.engine.enqueue(requests)
    assert stored(app) == 0
    app.engine.enqueue(requests[:-1])  # the connection is fine afterwards
    assert stored(app) == COUNT - 1


def test_a_database_error_in_a_chunk_rolls_back_every_chunk(pg_url: str) -> None:
    app = App("bulk", database_url=pg_url)
    base_url, _ = pg_url.split("?schema=")
    try:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute("SET statement_timeout = 1")  # 1 ms: inserting a chunk takes longer
            with pytest.raises(psycopg.errors.QueryCanceled):
                app.engine.enqueue([enqueue_request("bulk.job") for _ in range(COUNT)], conn=conn)
        assert stored(app) == 0
    finally:
        app.close()


def test_chunks_join_the_callers_transaction(pg_url: str) -> None:
    app = App("bulk", database_url=pg_url)
    base_url, _ = pg_url.split("?schema=")
    try:
        with psycopg.connect(base_url) as conn:
            app.engine.enqueue([enqueue_request("bulk.job") for _ in range(COUNT)], conn=conn)
            assert stored(app) == 0  # not visible before COMMIT
            conn.rollback()
            assert stored(app) == 0
            app.engine.enqueue([enqueue_request("bulk.job") for _ in range(COUNT)], conn=conn)
            app.engine.enqueue([enqueue_request("bulk.job") for _ in range(COUNT)], conn=conn)
            conn.commit()
        assert stored(app) == 2 * COUNT
    finally:
        app.close()


def test_a_batch_with_a_taken_deduplication_id_writes_nothing_and_names_the_request(
    app: App, database_url: str
) -> None:
    """Issue 25, item 3: 10 requests, the 7th carrying a deduplication id already held: the
    error names it and none of the others is written, so a caller that retries sends each
    once. With on_duplicate="return" the others are written and every id comes back."""
    [holder] = app.engine.enqueue([enqueue_request("bulk.job", deduplication_id="taken")])
    requests = [enqueue_request("bulk.job", task_id=f"b{i}") for i in range(10)]
    requests[6] = enqueue_request("bulk.job", task_id="b6", deduplication_id="taken")
    with pytest.raises(
        pgtasks.DuplicateTaskError, match=r"request 7 of 10: .*'taken'.*nothing|no task"
    ) as refused:
        app.engine.enqueue(requests)
    assert refused.value.existing_task_id == holder
    assert stored(app) == 1  # the holder alone
    if database_url.startswith("postgres"):  # in a caller's transaction: a savepoint, still usable
        base_url, _ = database_url.split("?schema=")
        with psycopg.connect(base_url) as conn:
            with pytest.raises(pgtasks.DuplicateTaskError):
                app.engine.enqueue(requests, conn=conn)
            app.engine.enqueue(requests[:6], conn=conn)
        assert stored(app) == 7
        app.engine.enqueue(requests[:6])  # already there: the same ids, nothing new
    else:
        app.engine.enqueue(requests[:6])
    got = app.engine.enqueue(requests, on_duplicate="return")
    assert got == [f"b{i}" for i in range(6)] + [holder] + [f"b{i}" for i in range(7, 10)]
    assert stored(app) == 10


def test_new_ids_sent_again_after_a_lost_reply_come_back_once(pg_url: str) -> None:
    """Tasks with new ids go in without the conflict check. A retry whose first attempt
    committed (here: rows sent again, some of them only) fails on the primary key and is sent
    again with the check: each id comes back, none is written twice. One task (a delay()), one
    statement, and chunks in the enqueue's own transaction and in the caller's (which stays
    usable)."""
    app = App("bulk", database_url=pg_url)
    sysdb = app.engine.database.sysdb
    rows = build_new_tasks(
        "bulk.job", [(i,) for i in range(COUNT)], SendOptions(), app.engine.codec, "default", 3
    )
    base_url, _ = pg_url.split("?schema=")
    try:
        one = sysdb.tasks_enqueue(rows[:1], new_ids=True)
        assert [(r.task_id, r.inserted) for r in one] == [(rows[0].task_id, True)]
        again = sysdb.tasks_enqueue(rows[:1], new_ids=True)
        assert [(r.task_id, r.inserted) for r in again] == [(rows[0].task_id, False)]
        assert stored(app) == 1
        small, rest = rows[:100], rows[100:]
        sysdb.tasks_enqueue(small[:40], new_ids=True)
        results = sysdb.tasks_enqueue(small, new_ids=True)
        assert [r.task_id for r in results] == [t.task_id for t in small]
        assert [r.inserted for r in results] == [False] * 40 + [True] * 60
        sysdb.tasks_enqueue(rest[ENQUEUE_CHUNK:], new_ids=True)  # the second chunk's rows
        with psycopg.connect(base_url) as conn:
            conn.execute("SELECT 1")  # the caller's transaction is open
            chunks = (rest[i : i + ENQUEUE_CHUNK] for i in range(0, len(rest), ENQUEUE_CHUNK))
            results = sysdb.tasks_enqueue_chunks(chunks, conn=conn, new_ids=True)
            assert conn.execute("SELECT 2").fetchone() == (2,)
        assert [r.task_id for r in results] == [t.task_id for t in rest]
        assert [r.inserted for r in results] == [True] * ENQUEUE_CHUNK + [False] * (len(rest) - ENQUEUE_CHUNK)
        assert stored(app) == COUNT
        chunks = (rest[i : i + ENQUEUE_CHUNK] for i in range(0, len(rest), ENQUEUE_CHUNK))
        again = sysdb.tasks_enqueue_chunks(chunks, new_ids=True)  # its own transaction
        assert [r.task_id for r in again] == [t.task_id for t in rest] and not any(r.inserted for r in again)
        assert stored(app) == COUNT
    finally:
        app.close()


def test_map_enqueue_refuses_arguments_it_would_misread_and_sends_nothing(app: App) -> None:
    @app.task(name="bulk.pair")
    def pair(a: object = None, b: object = None) -> list[object]:
        return [a, b]

    refusals = [
        (lambda: pair.map_enqueue(5), TypeError, "takes a list of argument lists, not int"),
        # a string was read one argument a letter: ("a", "b")
        (lambda: pair.map_enqueue(["ab"]), TypeError, "argument list 0 must be a list or tuple, not str"),
        (lambda: pair.map_enqueue([[1], 2]), TypeError, "argument list 1 must be a list or tuple, not int"),
        # the second task was taken for the first (an id sent again is not sent again): lost
        (
            lambda: pair.map_enqueue([[1], [2]], task_ids=["same", "same"]),
            ValueError,
            "map_enqueue got the task id 'same' twice; each task needs its own",
        ),
    ]
    for call, kind, message in refusals:
        with pytest.raises(kind, match=message):
            call()
    assert app.list_tasks(name="bulk.pair") == []
    assert [h.task_id for h in pair.map_enqueue([(1, 2), [3]], task_ids=["x", "y"])] == ["x", "y"]
