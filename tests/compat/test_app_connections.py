"""The Celery app's broker connections reach the pgtasks database: ``ensure_connection`` as
health checks call it (a real connection and ``SELECT 1``; a database that is down raises
kombu's OperationalError without the password), pools of connections and producers, and
what needs a broker refused with a reason."""

from __future__ import annotations

import threading

import pytest

from pgtasks.compat.celery import Celery
from pgtasks.compat.kombu import Connection
from pgtasks.compat.kombu.exceptions import ConnectionLimitExceeded, OperationalError
from pgtasks.compat.kombu.messaging import Producer


def test_a_health_check_connects_to_the_database(database_url: str) -> None:
    app = Celery("conn", broker=database_url)
    with app.connection_for_write() as conn:
        assert conn.ensure_connection(max_retries=1) is conn and conn.connected
        assert conn.transport.driver_type in ("postgresql", "sqlite")
        assert conn.info()["transport_cls"] == conn.transport.driver_type
    assert not conn.connected  # the block closed it
    assert app.connection().as_uri() == app.connection_for_read().as_uri()
    assert isinstance(app.broker_connection(), Connection)
    with app.connection_or_acquire() as pooled:
        assert pooled.connect().connected
    with app.connection_or_acquire() as again:
        assert again is pooled  # back in the pool, given again
    given = Connection(database_url)
    with app.connection_or_acquire(given) as conn:
        assert conn is given
    with app.producer_or_acquire() as producer:
        assert isinstance(producer, Producer)
        sent = app.send_task("conn.anything", producer=producer)  # accepted, not needed
    assert app.AsyncResult(sent.id).exists


def test_a_database_that_is_down_raises_operational_error_without_the_password() -> None:
    conn = Connection("postgresql://someone:s3cret@127.0.0.1:1/nowhere", connect_timeout=1)
    assert conn.as_uri() == "postgresql://someone:**@127.0.0.1:1/nowhere"
    assert conn.as_uri(include_password=True).endswith(":s3cret@127.0.0.1:1/nowhere")
    assert conn.info()["password"] == "**" and conn.info()["userid"] == "someone"
    seen: list[float] = []
    with pytest.raises(OperationalError, match="cannot connect to the pgtasks database") as failed:
        conn.ensure_connection(
            errback=lambda exc, interval: seen.append(interval),
            max_retries=2,
            interval_start=0.01,
            interval_step=0.01,
        )
    assert "s3cret" not in str(failed.value) and "127.0.0.1:1" in str(failed.value)
    assert seen == [0.01, 0.02] and not conn.connected
    with pytest.raises(OperationalError):
        conn.ensure(conn, lambda: "never", max_retries=0)()


def test_pool_limits_and_what_needs_a_broker(sqlite_url: str) -> None:
    app = Celery("pool", broker=sqlite_url, broker_pool_limit=1)
    first = app.pool.acquire()
    with pytest.raises(ConnectionLimitExceeded, match="limit of 1"):
        app.pool.acquire()
    with pytest.raises(ConnectionLimitExceeded, match="limit of 1"):
        app.pool.acquire(block=True, timeout=0.01)  # waited, nobody gave one back
    returned = threading.Thread(target=first.release)
    returned.start()
    assert app.pool.acquire(block=True, timeout=30) is first  # waits for the one given back
    returned.join()
    for refused in (first.channel, first.drain_events, first.SimpleQueue, first.Consumer):
        with pytest.raises(NotImplementedError, match="pgtasks has no message broker"):
            refused()
    with pytest.raises(NotImplementedError, match="channels do not exist here"):
        _ = first.default_channel
    assert first.clone().as_uri() == first.as_uri() and first.clone() is not first
    first.release()
    with app.producer_pool.acquire(block=True) as producer:  # kombu's producers are context managers
        assert isinstance(producer, Producer) and producer.channel is first
        with pytest.raises(ConnectionLimitExceeded):
            app.pool.acquire()
    assert app.pool.acquire() is first  # the block gave its connection back
    with pytest.raises(Exception, match="Redis"):
        Connection("redis://localhost:6379/0")
