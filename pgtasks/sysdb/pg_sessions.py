"""Sessions of the PostgreSQL dialect: two connection pools and the statement runners.

The main pool serves every operation. The generic pool (four connections) serves only the
hottest statements of a worker, the claims and the group-committed checkpoints, with generic
plans forced: PostgreSQL otherwise plans them anew at every call (a third of a millisecond of
server time each, more than running them), because each call's custom plan looks cheaper
than the generic one. Those statements are written so that their generic plans are as good,
whatever the table statistics (see ``claim_picked`` in ``sql/postgres.sql``; ``make
bench-explain`` prints both plans).

Connections that heal: after a server restart or a ``pg_terminate_backend`` the pooled idle
sessions are dead. The pool checks a session before handing it out, cheaply: only one whose
socket has something to read while idle (the server's goodbye) costs a round trip to test.
Operations that are safe to repeat (every single statement of :meth:`_run`, and an enqueue
whose task ids were fixed before the insert) are retried on a lost connection or an
unreachable server until the outage has lasted ``PGTASKS_RECONNECT_DEADLINE`` seconds
(default 30); one warning is logged per outage and one when it ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from pgtasks.support.backoff import Backoff, Retry
from pgtasks.sysdb import one_call
from pgtasks.sysdb.errors import ConfigurationError, DatabaseBusy, DatabaseReadOnly, DatabaseUnavailable
from pgtasks.sysdb.identifiers import quote_identifier
from pgtasks.sysdb.interface import EnqueueListener
from pgtasks.sysdb.lifo_pool import LifoConnectionPool
from pgtasks.sysdb.urls import DatabaseTarget

T = TypeVar("T")
POOL_WAIT_SECONDS = 10.0  # how long a caller waits for a connection before DatabaseUnavailable
MIN_POOL_WAIT_SECONDS = 1.0  # the least of it, even when outages are not waited out
IDLE_IN_TRANSACTION_MS = 5_000  # see session_options
IDLE_SESSION_TIMEOUT_SINCE = 140_000  # the server version that has idle_session_timeout
# Errors that may be the database's rather than the request's: the server ended the session,
# the network did, or the server refused for now (read below which SQLSTATEs are).
LOST_SESSION = (
    psycopg.OperationalError,
    psycopg.errors.IdleInTransactionSessionTimeout,
    psycopg.errors.ReadOnlySqlTransaction,  # an InternalError, class 25
)
# Of those, the SQLSTATEs (by class, or in full) that are an outage or a transient refusal:
# connection exceptions (08), insufficient resources (53: too many connections, out of memory,
# disk full), operator intervention (57: shutdown, cannot connect now, query cancelled by
# statement_timeout), an idle transaction ended by the server (25P03), a read-only server (25006:
# a standby, a read-only role), a lock not granted within lock_timeout (55P03) and transaction
# rollbacks (40: serialization failure, deadlock), all safe to retry. Others that psycopg also
# raises as OperationalError, such as program limits (54: a key over the index row size) or
# other object states (55), are the request's own fault: retrying repeats them, so they are
# raised as they are, never as an outage.
UNAVAILABLE_SQLSTATES = ("08", "53", "57", "25P03", "25006", "55P03", "40")
# Of those, the refusals of a server that is there and writable, on a session that lives.
BUSY_SQLSTATES = ("55P03", "57014", "40")
READ_ONLY_SQLSTATE = "25006"
# Immediate retries of a statement whose prepared plan went stale (see is_stale_plan): one per
# pooled session that may still hold the old plan, and a few more.
STALE_PLAN_RETRIES = 16


def is_unavailable(exc: BaseException) -> bool:
    """True when ``exc`` means the database is unreachable or refused for now (an outage)."""
    if not isinstance(exc, LOST_SESSION):
        return False
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(UNAVAILABLE_SQLSTATES)  # None: client-side, no reply


def is_busy(exc: BaseException) -> bool:
    """True when ``exc`` is a transient refusal by a live server (see :class:`DatabaseBusy`)."""
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is not None and sqlstate.startswith(BUSY_SQLSTATES)


def is_stale_plan(exc: BaseException) -> bool:
    """True when the server refused a statement prepared on this session before another session
    changed the columns of a table it reads (an operator's ``ALTER TABLE ... ADD COLUMN``, a
    newer pgtasks' migration): "cached plan must not change result type". The server refuses
    it again at every call until the session forgets it (:func:`forget_plans`). Recognised by
    the server's function, which, unlike the message, is never translated."""
    return (
        isinstance(exc, psycopg.errors.FeatureNotSupported)
        and exc.diag.source_function == "RevalidateCachedQuery"
    )


def forget_plans(conn: psycopg.Connection[Any]) -> None:
    """Drop every statement prepared on ``conn``'s session (idle, in autocommit): psycopg's
    and :mod:`pgtasks.sysdb.one_call`'s, which are prepared again at their next use."""
    with contextlib.suppress(Exception):  # a broken session: the pool drops it
        conn.execute("DEALLOCATE ALL")  # psycopg forgets its own on seeing it


def transient_words(exc: BaseException) -> tuple[type[DatabaseUnavailable], str]:
    """For an error for which :func:`is_unavailable` holds: the class pgtasks raises for it and
    what it means, worded for the operator ("the pgtasks database URL <words>: <error>")."""
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable, "is unavailable"
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate == READ_ONLY_SQLSTATE:
        return DatabaseReadOnly, (
            "is read-only (a standby, or a read-only role or default_transaction_read_only): "
            "waiting for a writable primary"
        )
    if is_busy(exc):
        return DatabaseBusy, "refused a statement for now (a lock held elsewhere, a timeout or a conflict)"
    return DatabaseUnavailable, "is unavailable"


GENERIC_POOL_SIZE = 4  # the claim loop, the two checkpoint writers, a spare
RECONNECT_DEADLINE_ENV = "PGTASKS_RECONNECT_DEADLINE"
DEFAULT_RECONNECT_DEADLINE = 60.0  # past a failover: 30 s without a primary, then a promotion
RECONNECT_BACKOFF = Backoff(first=0.05, cap=1.0)  # between attempts through an outage

log = logging.getLogger("pgtasks.sysdb")


def reconnect_deadline() -> float:
    """Seconds an outage is waited out by operations that are safe to repeat (from
    ``PGTASKS_RECONNECT_DEADLINE``; 0 turns retries off)."""
    raw = os.environ.get(RECONNECT_DEADLINE_ENV)
    if raw is None or raw == "":
        return DEFAULT_RECONNECT_DEADLINE
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ConfigurationError(f"{RECONNECT_DEADLINE_ENV} must be a number of seconds >= 0, not {raw!r}")
    return value


def session_alive(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle pooled session still lives, cheaply. Its socket has nothing to read
    unless the server spoke: usually to end the session (a restart, a terminated backend).
    Only then is a round trip spent to test it; a dead one is closed (the pool replaces it)."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
        if readable:
            ConnectionPool.check_connection(conn)
    except Exception:
        conn.close()
        return False
    return True


def session_options(dsn: str) -> str:
    """Server options for pgtasks' sessions, after any the URL sets.

    - JIT off: every statement here is a short OLTP one, and a claim whose estimated cost
      passes jit_above_cost (the partitioned claim on a big backlog) would spend 50 to 200 ms
      compiling code it then runs for 2 ms.
    - ``idle_in_transaction_session_timeout``: pgtasks never waits on anything inside its own
      transactions, so one idle for that long belongs to a process that is frozen or cut off
      from the server. Its row locks would otherwise block the others' recovery until TCP
      gives up (hours); the server ends the session instead.
    - READ COMMITTED, whatever the role's or the database's default: pgtasks' statements are
      written for it (claims skip locked rows, fences re-read the row they wait for). Under a
      default of REPEATABLE READ or SERIALIZABLE the same waits end in serialization failures,
      retried with a warning each episode (13 in 3 s of one worker draining 20,000 tasks).
    """
    own = conninfo_to_dict(dsn).get("options") or ""
    return (
        f"{own} -c jit=off -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS} "
        r"-c default_transaction_isolation=read\ committed"
    ).strip()


def _checkout(pool: ConnectionPool) -> psycopg.Connection[Any]:
    """A connection of ``pool`` whose session lives (see :func:`session_alive`); on the first
    dead one found, every idle session of the pool is tested at once, so that after a restart
    the callers find live sessions, not one dead session each. Give it back with
    :func:`_checkin`. Not a context manager: this is every statement's way in, and three
    nested generator context managers (the pool's among them) cost a tenth of a single
    enqueue's CPU."""
    for _ in range(3):
        conn = pool.getconn()
        if session_alive(conn):
            return conn
        pool.putconn(conn)
        pool.check()
    return pool.getconn()  # sessions keep dying: let the statement tell


def _checkin(pool: ConnectionPool, conn: psycopg.Connection[Any], error: BaseException | None) -> None:
    """Give back a connection of :func:`_checkout` as the pool's own context manager does (a
    transaction left open is committed, or rolled back after ``error``), except that a
    session the server refused a write on as read-only is closed: a standby stays one, and a
    role's default_transaction_read_only holds for the session. The pool replaces it, and
    the new one may reach the promoted primary (a multi-host URL) or the role's new setting."""
    try:
        if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
            conn.close()
        elif not conn.closed and conn.pgconn.transaction_status != TransactionStatus.IDLE:
            if error is None:
                conn.commit()
            else:
                with contextlib.suppress(Exception):  # a broken session: the pool drops it
                    conn.rollback()
        if error is not None and is_stale_plan(error) and not conn.closed:
            forget_plans(conn)
    finally:
        pool.putconn(conn)


class PostgresListener(EnqueueListener):
    """LISTEN on the schema's channel over a dedicated autocommit connection."""

    def __init__(self, target: DatabaseTarget, channel: str, presence_key: int | None = None) -> None:
        """``presence_key``: an advisory lock this session holds shared while it lives, which
        tells senders that somebody listens (see ``done_listeners_present``)."""
        try:
            dsn = target.listen_dsn or target.dsn
            self._conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
            if self._conn.info.server_version >= IDLE_SESSION_TIMEOUT_SINCE:
                # This session is idle by design: a role's idle_session_timeout (managed
                # databases set one) would end it, and lose what is sent meanwhile, each time.
                self._conn.execute("SET idle_session_timeout = 0")
            self._conn.execute(f"LISTEN {quote_identifier(channel, 'channel name')}")
            if presence_key is not None:
                self._conn.execute("SELECT pg_advisory_lock_shared(%s)", (presence_key,))
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"cannot listen on {target.display_url}: {exc}") from exc

    def wait(self, timeout: float) -> set[str]:
        # libpq's own calls, not Connection.notifies(): its timeout and stop_after arguments
        # need psycopg 3.2, and projects pin 3.1. The connection only ever sits idle in LISTEN.
        try:
            payloads = self._received()
            if not payloads:
                readable, _, _ = select.select([self._conn.fileno()], [], [], max(timeout, 0.0))
                if readable:
                    payloads = self._received()
            return payloads
        except (psycopg.OperationalError, OSError, ValueError) as exc:
            raise DatabaseUnavailable(f"listener connection lost: {exc}") from exc

    def _received(self) -> set[str]:
        """The payloads of the notifications that have arrived, without waiting."""
        pgconn = self._conn.pgconn
        pgconn.consume_input()  # a closed or broken connection raises OperationalError
        encoding = self._conn.info.encoding
        payloads = set()
        while (notify := pgconn.notifies()) is not None:
            payloads.add(notify.extra.decode(encoding))
        return payloads

    def close(self) -> None:
        self._conn.close()


class PostgresSessions:
    """Connection pools and statement runners; the dialect class provides ``target`` and
    ``sql`` (the named statements)."""

    target: DatabaseTarget
    sql: dict[str, str]

    def _open_sessions(
        self, pool_size: int, pool_wait_seconds: float | None = None, retry_for: float | None = None
    ) -> None:
        self._pool_size = pool_size
        self._pool_wait = POOL_WAIT_SECONDS if pool_wait_seconds is None else pool_wait_seconds
        self._pools: dict[bool, ConnectionPool] = {}
        self._pool_lock = threading.Lock()
        self._reconnect_deadline = reconnect_deadline() if retry_for is None else retry_for
        self._outage_since: float | None = None  # time.monotonic() of the first failure
        self._outage_lock = threading.Lock()
        self._one_call_statements: dict[str, one_call.OneCallStatement] = {}

    def limit_outage_wait(self, seconds: float) -> None:
        self._reconnect_deadline = min(self._reconnect_deadline, max(0.0, seconds))
        # Each attempt's wait for a pooled connection too (POOL_WAIT_SECONDS otherwise: with
        # the server gone, one attempt alone would hold a stopping worker that long).
        with self._pool_lock:
            self._pool_wait = min(self._pool_wait, max(MIN_POOL_WAIT_SECONDS, seconds))
            for pool in self._pools.values():
                pool.timeout = min(pool.timeout, self._pool_wait)

    def _close_sessions(self) -> None:
        with self._pool_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()

    def _connect_kwargs(self) -> dict[str, Any]:
        if self.target.transaction_pooling:
            # Behind a transaction-pooling PgBouncer a session is not ours: no startup options
            # (PgBouncer refuses them; set jit=off on the role instead, docs/production.md) and
            # no server-side prepared statements (PgBouncer before 1.21 cannot carry them).
            return {"row_factory": dict_row, "application_name": "pgtasks", "prepare_threshold": None}
        return {
            "row_factory": dict_row,
            "application_name": "pgtasks",
            "options": session_options(self.target.dsn),
        }

    def _pool_kwargs(self, generic: bool = False) -> dict[str, Any]:
        # Autocommit: a single-statement operation is one round trip (no BEGIN, no COMMIT);
        # operations of several statements open a transaction explicitly (_tx).
        kwargs = {**self._connect_kwargs(), "autocommit": True}
        if generic and not self.target.transaction_pooling:  # generic plans: for prepared ones
            kwargs["options"] += " -c plan_cache_mode=force_generic_plan"
        return kwargs

    def _open_pool(self, generic: bool = False) -> ConnectionPool:
        pool = self._pools.get(generic)
        if pool is not None:
            return pool
        with self._pool_lock:
            if generic not in self._pools:
                self._pools[generic] = LifoConnectionPool(
                    self.target.dsn,
                    min_size=1,
                    max_size=GENERIC_POOL_SIZE if generic else self._pool_size,
                    kwargs=self._pool_kwargs(generic),
                    timeout=self._pool_wait,
                    open=True,
                    name="pgtasks-generic" if generic else "pgtasks",
                )
            return self._pools[generic]

    @contextmanager
    def _pooled(self, generic: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection whose session lives (see :func:`_checkout`)."""
        pool = self._open_pool(generic)
        conn = _checkout(pool)
        try:
            yield conn
        except BaseException as exc:
            _checkin(pool, conn, exc)
            raise
        _checkin(pool, conn, None)

    @contextmanager
    def _conn(self, generic: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection. A lost connection or an unreachable server
        surfaces as DatabaseUnavailable; the pool drops broken connections when they return."""
        try:
            with self._pooled(generic) as conn:
                yield conn
        except (*LOST_SESSION, PoolTimeout) as exc:
            if not isinstance(exc, PoolTimeout) and not is_unavailable(exc):
                raise
            raise self._transient(exc) from exc
        except psycopg.errors.FeatureNotSupported as exc:
            if not is_stale_plan(exc):
                raise
            # A transaction is not repeated here; the session forgot its plans (_checkin), so
            # the caller's next attempt (the worker's, the beat's) runs.
            raise DatabaseBusy(
                f"the pgtasks database {self.target.display_url} refused a statement for now (a "
                f"table's columns changed since it was prepared; prepared again at the next try): {exc}"
            ) from exc

    def _transient(self, exc: Exception) -> DatabaseUnavailable:
        """The DatabaseUnavailable (or DatabaseBusy) that a transient ``exc`` is raised as."""
        cls, words = transient_words(exc)
        return cls(f"the pgtasks database {self.target.display_url} {words}: {self._describe(exc)}")

    def _describe(self, exc: Exception) -> str:
        """The error as the caller should read it: a pool timeout says it is one."""
        if isinstance(exc, PoolTimeout):
            return (
                f"no pooled connection within {self._pool_wait:g}s (pool timeout: every connection "
                "of the pool in use, or the server does not answer)"
            )
        return str(exc)

    @contextmanager
    def _tx(self, generic: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside one transaction (committed on success)."""
        with self._conn(generic) as conn, conn.transaction():
            yield conn

    def _run(
        self,
        name: str,
        params: dict[str, Any] | None,
        fetch: Callable[[psycopg.Cursor[Any]], T],
        generic: bool = False,
    ) -> T:
        """One statement in autocommit, retried through an outage (see :meth:`_retrying`):
        every statement run here is safe to repeat (reads, and writes that are idempotent or
        fenced)."""
        return self._retrying(lambda conn: fetch(conn.execute(self.sql[name], params or {})), generic)

    def _retrying(self, body: Callable[[psycopg.Connection[Any]], T], generic: bool = False) -> T:
        """``body`` on a pooled autocommit connection; on a lost connection or an unreachable
        server, again on a fresh one, until the outage has lasted the reconnect deadline
        (then DatabaseUnavailable). ``body`` must be safe to repeat: an attempt whose reply
        was lost may have committed."""
        retry: Retry | None = None  # made on the first failure: nothing added to the way through
        stale_plans = 0
        while True:
            conn: psycopg.Connection[Any] | None = None
            try:
                pool = self._open_pool(generic)
                conn = _checkout(pool)
                try:
                    result = body(conn)
                except BaseException as exc:
                    _checkin(pool, conn, exc)
                    raise
                _checkin(pool, conn, None)
            # PoolTimeout is an OperationalError too, raised before any connection is bound.
            except PoolTimeout as exc:
                error: Exception = exc
            except psycopg.errors.FeatureNotSupported as exc:
                # The session forgot its plans (_checkin): at once again, on the same or another
                # pooled session, which may hold the old plan too.
                if not is_stale_plan(exc) or stale_plans >= STALE_PLAN_RETRIES:
                    raise
                stale_plans += 1
                continue
            except LOST_SESSION as exc:
                if not is_unavailable(exc):
                    raise  # the request's own fault (a program limit, ...): never an outage
                # A lock timeout, a statement timeout, a serialization failure, a read-only or
                # a shutting-down server: retried like a lost connection, on the same deadline.
                error = exc
                if conn is not None and conn.broken:
                    self._open_pool(generic).check()  # replace every other dead idle session
            else:
                self._outage_ended()
                return result
            waited = self._outage_began(error)
            # The deadline counts from the outage's start (shared by every thread), and may
            # have been shortened meanwhile (limit_outage_wait): read afresh at each failure.
            retry = retry or Retry(RECONNECT_BACKOFF, last_try_at_deadline=True)
            retry.deadline = time.monotonic() + self._reconnect_deadline - waited
            pause = retry.next_delay()
            if pause is None:
                raise self._transient(error) from error
            time.sleep(pause)

    def _outage_began(self, error: Exception) -> float:
        """Note a failed attempt; return how long the outage has lasted. Warns once."""
        now = time.monotonic()
        with self._outage_lock:
            first = self._outage_since is None
            if self._outage_since is None:
                self._outage_since = now
            since = self._outage_since
        if first:
            log.warning(
                "the pgtasks database %s %s; retrying for up to %gs: %s",
                self.target.display_url,
                transient_words(error)[1],
                self._reconnect_deadline,
                (self._describe(error).strip().splitlines() or [type(error).__name__])[0],
            )
        return now - since

    def _outage_ended(self) -> None:
        if self._outage_since is None:  # the common case: no lock taken
            return
        with self._outage_lock:
            since, self._outage_since = self._outage_since, None
        if since is not None:
            log.warning(
                "the pgtasks database %s is reachable again after %.1fs",
                self.target.display_url,
                time.monotonic() - since,
            )

    def _all(
        self, name: str, params: dict[str, Any] | None = None, generic: bool = False
    ) -> list[dict[str, Any]]:
        return self._run(name, params, lambda cur: cur.fetchall(), generic)

    def _tuples(
        self, name: str, params: dict[str, Any] | None = None, generic: bool = False
    ) -> list[tuple[Any, ...]]:
        """:meth:`_all` with rows as tuples (read by position: no dictionary per row)."""

        def fetch(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            with conn.cursor(row_factory=tuple_row) as cur:
                return cur.execute(self.sql[name], params or {}).fetchall()

        return self._retrying(fetch, generic)

    def _one_call(
        self, name: str, params: dict[str, Any], generic: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """:meth:`_tuples` in one blocking libpq call (see :mod:`pgtasks.sysdb.one_call`), for
        the statements of threads that many others wait on; also the column names."""
        statement = self._one_call_statement(name)
        prepare = not self.target.transaction_pooling
        return self._retrying(lambda conn: one_call.run(conn, statement, params, prepare), generic)

    def _one_call_statement(self, name: str) -> one_call.OneCallStatement:
        """The statement ``name`` in libpq's form, parsed at its first use."""
        statement = self._one_call_statements.get(name)
        if statement is None:  # a race here parses twice, to the same value
            statement = self._one_call_statements[name] = one_call.OneCallStatement.parse(
                name, self.sql[name]
            )
        return statement

    def _one(self, name: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        return self._run(name, params, lambda cur: cur.fetchone())

    def _count(self, name: str, params: dict[str, Any] | None = None) -> int:
        return self._run(name, params, lambda cur: cur.rowcount)
