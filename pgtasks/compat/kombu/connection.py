"""kombu's ``kombu.connection``: :class:`Connection` to the pgtasks database.

Celery applications open a broker connection to check that the broker is reachable
(``app.connection_for_write().ensure_connection(max_retries=3)`` in health checks and start-up
scripts), to hold one across several sends (``producer=``/``connection=`` options, which
pgtasks' sending does not need) and to read its settings (``as_uri()``, ``info()``). Here the
broker is the database the URL names: connecting opens a real database connection and runs
``SELECT 1``; failures raise kombu's :class:`OperationalError` naming the database (without
its password). Channels, consumers and raw messages have no meaning without a broker and
raise NotImplementedError saying what to use instead.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from types import SimpleNamespace, TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg

from pgtasks.compat.bridge.retry_over_time import retry_over_time
from pgtasks.compat.kombu.exceptions import ConnectionLimitExceeded, OperationalError
from pgtasks.compat.kombu.messaging import Producer
from pgtasks.sysdb.urls import DatabaseTarget, parse_database_url, redact_url, resolve_database_url

__all__ = ["BrokerConnection", "Connection", "ConnectionPool"]

NO_BROKER = (
    "pgtasks has no message broker: {what} do not exist here; send tasks with "
    "Task.apply_async() or app.send_task(), read them with AsyncResult"
)
DEFAULT_CONNECT_TIMEOUT = 4.0  # seconds, as kombu's default connect_timeout


class Connection:
    """A connection to the pgtasks database, with kombu's ``Connection`` surface."""

    def __init__(
        self,
        hostname: str | None = None,
        userid: str | None = None,
        password: str | None = None,
        virtual_host: str | None = None,
        port: int | None = None,
        insist: bool = False,
        ssl: Any = False,
        transport: Any = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        transport_options: dict[str, Any] | None = None,
        heartbeat: float = 0,
        **kwargs: Any,
    ) -> None:
        self._url = resolve_database_url(hostname)
        self.target: DatabaseTarget = parse_database_url(self._url)
        parts = urlsplit(self._url)
        self.hostname = parts.hostname or ("localhost" if self.target.dialect == "postgres" else "")
        self.port = parts.port or (5432 if self.target.dialect == "postgres" else None)
        self.userid = userid or (unquote(parts.username) if parts.username else None)
        self._password = password or (unquote(parts.password) if parts.password else None)
        self.virtual_host = virtual_host or (parts.path.lstrip("/") or None)
        self.ssl = ssl
        self.insist = insist
        self.connect_timeout = connect_timeout
        self.transport_options = dict(transport_options or {})
        self.heartbeat = heartbeat
        driver = ("postgresql", "psycopg") if self.target.dialect == "postgres" else ("sqlite", "sqlite3")
        self.transport = SimpleNamespace(driver_type=driver[0], driver_name=driver[1])
        self._open: psycopg.Connection[Any] | sqlite3.Connection | None = None

    # Errors a caller retries on, as kombu lists its transport's.
    connection_errors: tuple[type[BaseException], ...] = (
        OperationalError,
        psycopg.OperationalError,
        sqlite3.OperationalError,
        ConnectionError,
    )
    recoverable_connection_errors = connection_errors
    channel_errors: tuple[type[BaseException], ...] = ()
    recoverable_channel_errors: tuple[type[BaseException], ...] = ()
    is_evented = False
    supports_heartbeats = False

    def __repr__(self) -> str:
        return f"<Connection: {self.as_uri()} at {id(self):#x}>"

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    # -- connecting ----------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._open is not None

    @property
    def connection(self) -> Any:
        """The open database connection (opened on first use)."""
        self.connect()
        return self._open

    def connect(self) -> Connection:
        """Open the database connection now (once) and check it answers ``SELECT 1``."""
        if self._open is None:
            try:
                self._open = self._connect()
            except (psycopg.Error, sqlite3.Error, OSError) as exc:
                raise OperationalError(
                    f"cannot connect to the pgtasks database {self.as_uri()}: {exc}"
                ) from exc
        return self

    def _connect(self) -> psycopg.Connection[Any] | sqlite3.Connection:
        if self.target.dialect == "postgres":
            timeout = max(1, round(self.connect_timeout)) if self.connect_timeout else None
            conn = psycopg.connect(self.target.dsn, autocommit=True, connect_timeout=timeout)
            try:
                conn.execute("SELECT 1")
            except BaseException:
                conn.close()
                raise
            return conn
        lite = sqlite3.connect(self.target.sqlite_path, timeout=self.connect_timeout or 5.0)
        lite.execute("SELECT 1")
        return lite

    def ensure_connection(
        self,
        errback: Callable[[BaseException, float], Any] | None = None,
        max_retries: int | None = None,
        interval_start: float = 2,
        interval_step: float = 2,
        interval_max: float = 30,
        callback: Callable[[], Any] | None = None,
        reraise_as_library_errors: bool = True,
        timeout: float | None = None,
    ) -> Connection:
        """Connect, retrying on failure (``max_retries`` times, None: until it works or
        ``timeout`` seconds passed), waiting ``interval_start`` seconds then ``interval_step``
        more each time up to ``interval_max``; ``errback(exc, interval)`` sees each failure.
        Raises :class:`OperationalError` when it gives up."""
        retry_over_time(
            self.connect,
            self.recoverable_connection_errors,
            errback=_telling(errback),
            max_retries=max_retries,
            interval_start=interval_start,
            interval_step=interval_step,
            interval_max=interval_max,
            callback=callback,
            timeout=timeout,
        )
        return self

    def ensure(
        self,
        obj: Any,
        fun: Callable[..., Any],
        errback: Callable[[BaseException, float], Any] | None = None,
        max_retries: int | None = None,
        interval_start: float = 1,
        interval_step: float = 1,
        interval_max: float = 1,
        on_revive: Callable[[Any], Any] | None = None,
        **kwargs: Any,
    ) -> Callable[..., Any]:
        """``fun`` wrapped to reconnect and retry when it raises a connection error."""

        def ensured(*args: Any, **kw: Any) -> Any:
            def attempt() -> Any:
                self.connect()
                return fun(*args, **kw)

            def failed(exc: BaseException, pauses: Iterator[float], retries: int) -> float:
                self.release()
                return _telling(errback)(exc, pauses, retries)

            return retry_over_time(
                attempt,
                self.recoverable_connection_errors,
                errback=failed,
                max_retries=max_retries,
                interval_start=interval_start,
                interval_step=interval_step,
                interval_max=interval_max,
            )

        return ensured

    def release(self) -> None:
        """Close the database connection (a later use opens a new one)."""
        opened, self._open = self._open, None
        if opened is not None:
            opened.close()

    close = release

    def clone(self, **kwargs: Any) -> Connection:
        """A new, unopened connection to the same database."""
        options: dict[str, Any] = {
            "connect_timeout": self.connect_timeout,
            "transport_options": self.transport_options,
        }
        options.update(kwargs)
        return type(self)(self._url, **options)

    # -- describing ----------------------------------------------------------------------
    def as_uri(self, include_password: bool = False, mask: str = "**", getfields: Any = None) -> str:
        """The database URL, its password replaced by ``mask`` unless ``include_password``."""
        if include_password:
            return self._url
        return redact_url(self._url).replace(":***@", f":{mask}@")

    def info(self) -> dict[str, Any]:
        """kombu's connection settings (the password masked: pgtasks never hands it out)."""
        return {
            "hostname": self.hostname,
            "userid": self.userid,
            "password": "**" if self._password else None,
            "virtual_host": self.virtual_host,
            "port": self.port,
            "insist": self.insist,
            "ssl": self.ssl,
            "transport_cls": self.transport.driver_type,
            "connect_timeout": self.connect_timeout,
            "transport_options": self.transport_options,
            "login_method": None,
            "uri_prefix": None,
            "heartbeat": self.heartbeat,
            "failover_strategy": "round-robin",
            "alternates": [],
        }

    # -- what needs a broker ---------------------------------------------------------------
    def channel(self) -> Any:
        raise NotImplementedError(NO_BROKER.format(what="channels"))

    @property
    def default_channel(self) -> Any:
        raise NotImplementedError(NO_BROKER.format(what="channels"))

    def drain_events(self, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_BROKER.format(what="broker events"))

    def Consumer(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_BROKER.format(what="message consumers"))

    def SimpleQueue(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_BROKER.format(what="message queues"))

    SimpleBuffer = SimpleQueue

    def Producer(self, channel: Any = None, *args: Any, **kwargs: Any) -> Any:
        """kombu's Producer bound to this connection (what ``producer=`` options take)."""
        return Producer(self, *args, **kwargs)

    def Pool(self, limit: int | None = None, **kwargs: Any) -> ConnectionPool:
        return ConnectionPool(self, limit=limit)


BrokerConnection = Connection  # kombu's old name


def _telling(
    errback: Callable[[BaseException, float], Any] | None,
) -> Callable[[BaseException, Iterator[float], int], float]:
    """The next pause, shown to ``errback(exc, interval)`` first (kombu's connection retries)."""

    def next_pause(exc: BaseException, pauses: Iterator[float], retries: int) -> float:
        pause = next(pauses)
        if errback is not None:
            errback(exc, pause)
        return pause

    return next_pause


class ConnectionPool:
    """kombu's pool of connections: ``acquire()`` gives a connection whose ``release()``
    returns it to the pool (opened again only if it was closed). With ``limit`` connections
    given out, ``acquire(block=True)`` waits for one to come back (``timeout`` seconds, None:
    for ever), ``acquire(block=False)`` raises :class:`ConnectionLimitExceeded`."""

    def __init__(self, connection: Connection, limit: int | None = None, **kwargs: Any) -> None:
        self.connection = connection
        self.limit = limit
        self._idle: deque[Connection] = deque()
        self._made = 0
        self._returned = threading.Condition()

    def acquire(self, block: bool = False, timeout: float | None = None) -> Connection:
        with self._returned:
            full = not self._idle and self.limit is not None and self._made >= self.limit
            if full and not (block and self._returned.wait_for(lambda: bool(self._idle), timeout)):
                raise ConnectionLimitExceeded(f"connection pool limit of {self.limit} exceeded")
            if self._idle:
                conn = self._idle.popleft()
            else:
                conn = self.connection.clone()
                self._made += 1
        conn.release = lambda: self._give_back(conn)  # type: ignore[method-assign]
        return conn

    def _give_back(self, conn: Connection) -> None:
        with self._returned:
            self._idle.append(conn)
            self._returned.notify()

    def release(self, resource: Connection) -> None:
        resource.release()

    def force_close_all(self) -> None:
        """Close every connection the pool holds."""
        with self._returned:
            while self._idle:
                Connection.release(self._idle.popleft())
