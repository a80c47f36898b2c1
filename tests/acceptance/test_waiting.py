"""Durable waiting with real worker processes (docs/waiting.md): a sleep across a worker
SIGKILL and a PostgreSQL restart, a thousand sleepers on two slots, and messages, events and
streams read and sent from this process while the tasks run, on both dialects and on the
threads, asyncio and prefork pools."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks import Client, Status
from pgtasks.engine.options import SendOptions
from pgtasks.sending import send_many
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of
from tests.support.pgserver import PostgresServer
from tests.support.processes import stop, worker_process
from tests.support.schemas import scratch_schema, with_schema

APP = "tests.acceptance.apps.waiting_app"


def _status(client: Client, task_id: str) -> Status:
    record = client.engine.get_task(task_id)
    assert record is not None
    return record.status


def test_a_sleep_outlives_a_killed_worker_and_a_postgres_restart(tmp_path: Path) -> None:
    server = PostgresServer().start()
    ledger = tmp_path / "effects.log"
    try:
        client = Client(server.url)
        first = worker_process(server.url, ledger, "w1", app=APP, concurrency=1, lease_seconds=60)
        sleeping = client.enqueue("waiting.sleeper", [3.0])
        wait_for(lambda: _status(client, sleeping.id) is Status.DELAYED, timeout=60, what="the sleep")
        record = client.engine.get_task(sleeping.id)
        assert record is not None and record.executor_id is None  # no worker holds it
        # The only slot of the worker is free: another task runs to its end meanwhile.
        assert client.enqueue("waiting.sleeper", [0]).get(timeout=30) == "w1"
        assert _status(client, sleeping.id) is Status.DELAYED
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        server.stop("immediate")
        server.launch()
        second = worker_process(server.url, ledger, "w2", app=APP, concurrency=1, lease_seconds=60)
        try:
            assert sleeping.get(timeout=60) == "w2"
        finally:
            stop(second)
        wake_at = int(client.engine.admin.steps(sleeping.id)[1].output or 0)
        done = client.engine.get_task(sleeping.id)
        assert done is not None and wake_at <= done.updated_at < wake_at + 15_000  # on time
        mine = [line.split()[1] for line in lines_of(ledger) if line.startswith(sleeping.id)]
        assert mine == ["before", "after"]  # each step once: woke once
        client.close()
    finally:
        server.destroy()


@pytest.fixture(scope="module")
def pg_worker(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, Path]]:
    """One worker on PostgreSQL for the module, with the asyncio pool."""
    ledger = tmp_path_factory.mktemp("postgres") / "effects.log"
    with scratch_schema(pg_server_url) as schema:
        yield from _serve(with_schema(pg_server_url, schema), ledger, "asyncio")


@pytest.fixture(scope="module")
def sqlite_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, Path]]:
    """One worker on SQLite for the module, with the prefork pool."""
    folder = tmp_path_factory.mktemp("sqlite")
    yield from _serve(f"sqlite:///{folder / 'db.sqlite3'}", folder / "effects.log", "prefork")


@pytest.fixture(params=["postgres", "sqlite"])
def shared(request: pytest.FixtureRequest) -> tuple[Client, Path]:
    """The module's worker of each dialect in turn."""
    worker: tuple[Client, Path] = request.getfixturevalue(
        "pg_worker" if request.param == "postgres" else "sqlite_worker"
    )
    return worker


def _serve(url: str, ledger: Path, pool: str) -> Iterator[tuple[Client, Path]]:
    ledger.touch()
    client = Client(url)
    client.engine.admin.migrate()
    log = ledger.parent / "worker.log"  # a file: a pipe nobody reads would fill and block it
    worker: subprocess.Popen[str] = worker_process(
        url, ledger, "w1", app=APP, pool=pool, lease_seconds=30, output=log
    )
    try:
        yield client, ledger
    finally:
        stop(worker)
        client.close()


def test_a_thousand_sleepers_on_two_slots_all_finish(pg_worker: tuple[Client, Path]) -> None:
    client, _ = pg_worker
    handles = send_many(client.engine, "waiting.nap", [[1.0]] * 1000, None, SendOptions.from_kwargs())
    assert sum(h.get(timeout=120) for h in handles) == 1000


def test_messages_are_received_once_and_recv_times_out(shared: tuple[Client, Path]) -> None:
    client, _ = shared
    receiver = client.enqueue("waiting.receiver", ["t", 30.0, 2])
    wait_for(lambda: _status(client, receiver.id) is Status.DELAYED, timeout=30, what="the receive")
    suspended = client.get_task(receiver.id, steps=False)
    assert suspended is not None and suspended.wait_for == f"message:{receiver.id}:t"
    assert client.send(receiver.id, {"n": 1}, topic="t", idempotency_key="k")
    assert not client.send(receiver.id, {"n": 1}, topic="t", idempotency_key="k")  # sent once
    assert client.send(receiver.id, "second", topic="t")
    assert receiver.get(timeout=30) == [{"n": 1}, "second"]
    in_async = client.enqueue("waiting.async_receiver", ["t", 30.0])
    wait_for(lambda: _status(client, in_async.id) is Status.DELAYED, timeout=30, what="the async receive")
    assert client.send(in_async.id, "to a coroutine", topic="t")
    assert in_async.get(timeout=30) == "to a coroutine"
    assert client.get_event(in_async.id, "got", timeout=None) == "to a coroutine"
    started = time.monotonic()
    lonely = client.enqueue("waiting.receiver", [None, 1.5])
    assert lonely.get(timeout=30) == [None]
    assert time.monotonic() - started >= 1.5
    sender = client.enqueue("waiting.messenger", [lonely.id, 5])
    assert sender.get(timeout=30) is True
    shown = client.task_messages(lonely.id)
    assert [(m.topic, json.loads(m.message), m.consumed) for m in shown] == [("from-task", 5, False)]


def test_events_and_streams_are_read_from_another_process_while_the_task_runs(
    shared: tuple[Client, Path],
) -> None:
    client, _ = shared
    publisher = client.enqueue("waiting.publisher", [3, 0.7])
    waiter = client.enqueue("waiting.event_waiter", [publisher.id, "progress", 30])
    assert client.get_event(publisher.id, "progress", timeout=30) in (0, 1, 2)  # waits for it
    values = []
    for value in client.read_stream(publisher.id, "out", timeout=30):
        values.append(value)
        if len(values) == 1:
            assert _status(client, publisher.id) in (Status.PENDING, Status.DELAYED, Status.ENQUEUED)
    assert values == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert publisher.get(timeout=30) == 3
    assert waiter.get(timeout=30) in (0, 1, 2)
    assert client.get_event(publisher.id, "progress", timeout=None) == 2
    history = [(e.key, json.loads(e.value)) for e in client.task_events(publisher.id)]
    assert history == [("progress", i) for i in range(3)]
    assert client.get_event(publisher.id, "never", timeout=0.2) is None
