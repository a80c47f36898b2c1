"""Client: enqueue by name from a process without the task code, inside the caller's
transaction; configuration errors at construction."""

from __future__ import annotations

import psycopg
import pytest

import pgtasks
from pgtasks import App, Client
from tests.support.inprocess import running_worker


def test_enqueue_joins_the_callers_transaction(pg_url: str) -> None:
    client = Client(pg_url)
    base_url, schema = pg_url.split("?schema=")
    with psycopg.connect(base_url) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS public.orders_" + schema + " (id int)")
        conn.commit()
        # Rolled back: neither the order nor the task exists.
        conn.execute(f"INSERT INTO public.orders_{schema} VALUES (1)")
        rolled_back = client.enqueue("shop.confirm", [1], conn=conn)
        conn.rollback()
        assert client.AsyncResult(rolled_back.id).status is None
        # Committed: both exist, and a worker runs the task.
        conn.execute(f"INSERT INTO public.orders_{schema} VALUES (2)")
        committed = client.enqueue("shop.confirm", [2], conn=conn)
        assert client.AsyncResult(committed.id).status is None  # not visible before COMMIT
        conn.commit()
        conn.execute(f"DROP TABLE public.orders_{schema}")
        conn.commit()
    assert committed.status == "ENQUEUED"
    app = App("shop", database_url=pg_url, poll_interval=0.02)

    @app.task(name="shop.confirm")
    def confirm(order: int) -> str:
        return f"confirmed {order}"

    with running_worker(app):
        assert committed.get(timeout=20) == "confirmed 2"
    assert [t.task_id for t in client.list_tasks()] == [committed.id]
    client.close()
    app.close()


def test_a_conn_that_is_no_psycopg_connection_is_named_on_postgres(pg_url: str) -> None:
    """Was "AttributeError: 'str' object has no attribute 'cursor'" from inside pgtasks."""
    app = App("connkind", database_url=pg_url)
    job = app.task(name="connkind.job")(lambda x=0: x)
    try:
        refused = r"^conn= must be a psycopg.Connection, not (str|object)$"
        with pytest.raises(pgtasks.ConfigurationError, match=refused):
            app.enqueue("connkind.job", conn="postgresql://elsewhere")
        with pytest.raises(pgtasks.ConfigurationError, match=refused):
            job.map_enqueue([[1], [2]], conn=object())  # the bulk path
        assert app.list_tasks() == []
    finally:
        app.close()


def test_sqlite_cannot_join_a_callers_connection(sqlite_url: str) -> None:
    client = Client(sqlite_url)
    with pytest.raises(pgtasks.ConfigurationError, match="PostgreSQL transaction"):
        client.enqueue("x.y", conn=object())
    client.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://localhost:6379/0", "Redis"),
        ("amqp://guest@localhost//", "RabbitMQ"),
        ("postgresq://localhost/db", "unknown scheme"),
        ("localhost:5432", "not a URL"),
        ("sqlite://", "in-memory"),
    ],
)
def test_urls_pgtasks_cannot_use_fail_at_once(url: str, message: str) -> None:
    with pytest.raises(pgtasks.ConfigurationError, match=message) as info:
        App("proj", database_url=url)
    assert "PGTASKS_DATABASE_URL" in str(info.value) or "SQLite" in str(info.value)


def test_database_url_from_environment(monkeypatch: pytest.MonkeyPatch, sqlite_url: str) -> None:
    monkeypatch.setenv("PGTASKS_DATABASE_URL", sqlite_url)
    assert App("proj").settings.database_url == sqlite_url
    monkeypatch.delenv("PGTASKS_DATABASE_URL")
    assert App("proj").settings.database_url == "sqlite:///pgtasks.sqlite3"
    assert App("proj", database_url=sqlite_url).settings.database_url == sqlite_url


def test_unreachable_server_reports_the_url_without_password() -> None:
    app = App("proj", database_url="postgresql://user:secret@127.0.0.1:1/nowhere")
    with pytest.raises(pgtasks.DatabaseUnavailable) as info:
        app.list_tasks()
    assert "***" in str(info.value) and "secret" not in str(info.value)
    app.close()


def test_a_url_without_host_in_its_authority_connects(pg_url: str) -> None:
    """'postgresql:///db?host=...' (libpq's form for a Unix socket, or a host given as a
    parameter) keeps its empty authority: the connection string was 'postgresql:/db', which
    libpq refused. Here the suite's host, port and user go in the query instead."""
    from urllib.parse import parse_qsl, urlencode, urlsplit

    parts = urlsplit(pg_url)
    given = {"host": parts.hostname or "", "port": str(parts.port or 5432), "user": parts.username or ""}
    if parts.password:
        given["password"] = parts.password
    query = urlencode({**given, **dict(parse_qsl(parts.query))})
    client = Client(f"postgresql://{parts.path}?{query}")
    handle = client.enqueue("shop.confirm", [3])
    assert [t.task_id for t in client.list_tasks()] == [handle.id]
    client.close()
