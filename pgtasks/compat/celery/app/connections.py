"""The Celery app's broker connections and producers (``app.connection_for_write()``,
``app.pool``, ``app.producer_or_acquire()``, ...), which here reach the pgtasks database:
see ``kombu.connection`` (compat/kombu/connection.py) for what a connection can do."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from pgtasks.compat.bridge.configuration import database_url
from pgtasks.compat.kombu.connection import Connection, ConnectionPool
from pgtasks.compat.kombu.messaging import Producer

__all__ = ["ConnectionsMixin", "ProducerPool"]


class _PooledProducer(Producer):
    """A producer acquired from a :class:`ProducerPool`: releasing it (or leaving its ``with``
    block) gives its connection back to the pool, as kombu's pooled producers do."""

    def release(self) -> None:
        if isinstance(self.channel, Connection):
            self.channel.release()

    close = release


class ProducerPool:
    """kombu's pool of producers: ``acquire()`` gives a :class:`Producer` on a connection of
    the app's pool (what ``apply_async(producer=...)`` takes; pgtasks sends without one)."""

    def __init__(self, connections: ConnectionPool, limit: int | None = None) -> None:
        self.connections = connections
        self.limit = limit

    def acquire(self, block: bool = False, timeout: float | None = None) -> Producer:
        return _PooledProducer(self.connections.acquire(block=block, timeout=timeout))

    def release(self, resource: Producer) -> None:
        resource.release()


class ConnectionsMixin:
    """What the Celery app adds for broker connections (the database here)."""

    conf: Any
    _connection_pool: ConnectionPool | None = None
    _producer_pool: ProducerPool | None = None

    def connection_for_write(self, url: str | None = None, **kwargs: Any) -> Connection:
        """A connection to the database (``broker_write_url``, else ``broker_url``)."""
        return self._connection(url or self.conf.get("broker_write_url"), **kwargs)

    def connection_for_read(self, url: str | None = None, **kwargs: Any) -> Connection:
        """A connection to the database (``broker_read_url``, else ``broker_url``)."""
        return self._connection(url or self.conf.get("broker_read_url"), **kwargs)

    def connection(self, hostname: str | None = None, **kwargs: Any) -> Connection:
        """Celery's older name of :meth:`connection_for_write`."""
        return self.connection_for_write(hostname, **kwargs)

    broker_connection = connection

    def _connection(self, url: str | None, **kwargs: Any) -> Connection:
        given = {name: value for name, value in kwargs.items() if value is not None}
        timeout = self.conf.get("broker_connection_timeout")
        if "connect_timeout" not in given and timeout is not None:
            given["connect_timeout"] = float(timeout)
        return Connection(url or database_url(self.conf), **given)

    @contextlib.contextmanager
    def connection_or_acquire(
        self, connection: Connection | None = None, pool: bool = True, *args: Any, **kwargs: Any
    ) -> Iterator[Connection]:
        """``connection`` as it is, or one acquired from :attr:`pool` (released after)."""
        if connection is not None:
            yield connection
            return
        acquired = self.pool.acquire(block=True) if pool else self.connection_for_write()
        try:
            yield acquired
        finally:
            acquired.release()

    default_connection = connection_or_acquire

    @property
    def pool(self) -> ConnectionPool:
        """The app's connection pool (``broker_pool_limit`` connections at most)."""
        if self._connection_pool is None:
            limit = self.conf.get("broker_pool_limit")
            self._connection_pool = ConnectionPool(self.connection_for_write(), limit=limit or None)
        return self._connection_pool

    @property
    def producer_pool(self) -> ProducerPool:
        if self._producer_pool is None:
            self._producer_pool = ProducerPool(self.pool, limit=self.pool.limit)
        return self._producer_pool

    @contextlib.contextmanager
    def producer_or_acquire(self, producer: Producer | None = None) -> Iterator[Producer]:
        """``producer`` as it is, or one acquired from :attr:`producer_pool` (released after)."""
        if producer is not None:
            yield producer
            return
        acquired = self.producer_pool.acquire(block=True)
        try:
            yield acquired
        finally:
            self.producer_pool.release(acquired)

    default_producer = producer_or_acquire
