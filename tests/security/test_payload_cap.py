"""The cap on serialized task arguments (``max_payload_bytes``): enforced at enqueue with an
error naming the task and the size, on one task and on bulk enqueues (nothing of the batch
is written), on PostgreSQL and SQLite."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pgtasks import App, Client, ConfigurationError, PayloadTooLarge, SerializationError
from pgtasks.engine.core import ENQUEUE_CHUNK
from pgtasks.engine.serialization import Codec
from pgtasks.engine.settings import DEFAULT_MAX_PAYLOAD_BYTES, Settings
from tests.security.conftest import CAP
from tests.security.support import refused, snapshot
from tests.support.requests import enqueue_request

NAME = "sec.job"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def sized_args(size: int, char: str = "x") -> list[str]:
    """One string argument whose serialized inputs are exactly ``size`` bytes."""
    overhead = len(Codec().dumps_inputs(NAME, ("",), {})[1])
    width = len(Codec().dumps_inputs(NAME, (char,), {})[1]) - overhead
    count, rest = divmod(size - overhead, width)
    args = [char * count + "x" * rest]
    assert len(Codec().dumps_inputs(NAME, tuple(args), {})[1].encode()) == size
    return args


def test_the_default_cap_is_16_mib_and_documented() -> None:
    assert Settings(database_url="sqlite:///x.sqlite3").max_payload_bytes == DEFAULT_MAX_PAYLOAD_BYTES
    assert DEFAULT_MAX_PAYLOAD_BYTES == 16 * 1024 * 1024
    assert "`max_payload_bytes`" in (DOCS / "configuration.md").read_text()
    assert "max_payload_bytes" in (DOCS / "security.md").read_text()


@pytest.mark.parametrize("cap", [0, -1, True, 1.5, "16MB", None])
def test_a_cap_that_is_not_a_positive_integer_is_refused(sqlite_url: str, cap: object) -> None:
    with pytest.raises(ConfigurationError, match="max_payload_bytes"):
        App("sec", database_url=sqlite_url, max_payload_bytes=cap)  # type: ignore[arg-type]


def test_the_cap_is_inclusive_and_counts_utf8_bytes(app: App) -> None:
    at_cap = app.send_task(NAME, sized_args(CAP)).id
    assert app.engine.get_task(at_cap) is not None
    error = refused(
        app, lambda: app.send_task(NAME, sized_args(CAP + 1)), "max_payload_bytes", PayloadTooLarge
    )
    assert isinstance(error, PayloadTooLarge) and isinstance(error, SerializationError)
    assert (error.size, error.limit) == (CAP + 1, CAP)
    assert (
        f"task {NAME!r}" in str(error) and f"{CAP + 1} bytes" in str(error) and f"{CAP} bytes" in str(error)
    )
    # JSON writes "é" as a six-byte escape: the size is that of the stored text.
    refused(app, lambda: app.send_task(NAME, ["é" * (CAP // 6 + 1)]), f"{NAME!r}", PayloadTooLarge)


def test_the_cap_applies_to_keyword_arguments_and_registered_tasks(app: App) -> None:
    @app.task(name="sec.registered")
    def registered(blob: str = "") -> int:
        return len(blob)

    refused(app, lambda: registered.delay(blob="x" * CAP), "'sec.registered'", PayloadTooLarge)
    refused(app, lambda: registered.apply_async(kwargs={"blob": "y" * CAP}), "bytes", PayloadTooLarge)
    assert app.engine.get_task(registered.delay(blob="small").id) is not None


def test_a_bulk_enqueue_with_one_oversized_task_writes_nothing(app: App) -> None:
    requests = [enqueue_request(NAME, args=(i,)) for i in range(50)]
    requests.insert(25, enqueue_request(NAME, args=tuple(sized_args(CAP + 1))))
    refused(app, lambda: app.engine.enqueue(requests), f"{CAP + 1} bytes", PayloadTooLarge)

    @app.task(name="sec.mapped")
    def mapped(value: object) -> None:
        pass

    refused(app, lambda: mapped.map_enqueue([(1,), ("z" * CAP,), (2,)]), "'sec.mapped'", PayloadTooLarge)
    assert snapshot(app) == {}


def test_an_oversized_task_in_a_later_chunk_writes_nothing(app: App) -> None:
    requests = [enqueue_request(NAME, args=(i,)) for i in range(2 * ENQUEUE_CHUNK + 5)]
    requests[-2] = enqueue_request(NAME, args=tuple(sized_args(CAP + 100)))
    refused(app, lambda: app.engine.enqueue(requests), "max_payload_bytes", PayloadTooLarge)
    assert snapshot(app) == {}
    del requests[-2]
    assert len(app.engine.enqueue(requests)) == len(snapshot(app)) == 2 * ENQUEUE_CHUNK + 4


def test_a_client_has_the_cap_too(database_url: str) -> None:
    client = Client(database_url, max_payload_bytes=100)
    try:
        with pytest.raises(PayloadTooLarge, match=r"'remote\.task'"):
            client.enqueue("remote.task", ["x" * 100])
        assert client.list_tasks() == []
        assert client.AsyncResult(client.enqueue("remote.task", ["x"]).id).status == "ENQUEUED"
    finally:
        client.close()


def test_the_default_cap_refuses_16_mib_of_arguments(sqlite_url: str) -> None:
    app = App("sec", database_url=sqlite_url)
    try:
        with pytest.raises(PayloadTooLarge, match=f"over the limit of {DEFAULT_MAX_PAYLOAD_BYTES} bytes"):
            app.send_task(NAME, ["x" * DEFAULT_MAX_PAYLOAD_BYTES])
        assert app.list_tasks() == []
    finally:
        app.close()


def test_a_refused_task_leaves_the_callers_transaction_usable(pg_app: App, pg_url: str) -> None:
    base_url = pg_url.split("?schema=")[0]
    with psycopg.connect(base_url) as conn:
        kept = pg_app.send_task(NAME, [1], conn=conn).id
        with pytest.raises(PayloadTooLarge):
            pg_app.send_task(NAME, sized_args(CAP + 1), conn=conn)
        conn.commit()  # refused before any SQL: the transaction was never aborted
    assert list(snapshot(pg_app)) == [kept]
