"""Sessions of the PostgreSQL dialect: two connection pools and the statement runners.

The main pool serves every operation. The generic pool (three connections) serves only the
hottest statements of a worker, the claims and the group-committed checkpoints, with generic
plans forced: PostgreSQL otherwise plans them anew at every call (a third of a millisecond of
server time each, more than running them), because each call's custom plan looks cheaper
than the generic one. Those statements are written so that their generic plans are as good,
whatever the table statistics (see ``claim_picked`` in ``sql/postgres.sql``; ``make
bench-explain`` prints both plans).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from pgtasks.sysdb.errors import DatabaseUnavailable
from pgtasks.sysdb.identifiers import quote_identifier
from pgtasks.sysdb.interface import EnqueueListener
from pgtasks.sysdb.urls import DatabaseTarget

T = TypeVar("T")
POOL_WAIT_SECONDS = 10.0  # how long a caller waits for a connection before DatabaseUnavailable
IDLE_IN_TRANSACTION_MS = 5_000  # see session_options
# Errors after which a session is gone: the server ended it, or the network did.
LOST_SESSION = (psycopg.OperationalError, psycopg.errors.IdleInTransactionSessionTimeout)
# Of those, the SQLSTATEs (by class, or in full) that are an outage or a transient refusal:
# connection exceptions (08), insufficient resources (53: too many connections, out of memory,
# disk full), operator intervention (57: shutdown, cannot connect now, query cancelled), an idle
# transaction ended by the server (25P03) and transaction rollbacks (40: serialization failure,
# deadlock), all safe to retry. Others that psycopg also raises as OperationalError, such as
# program limits (54: a key over the index row size) or object state (55), are the request's
# own fault: retrying repeats them, so they are raised as they are, never as an outage.
UNAVAILABLE_SQLSTATES = ("08", "53", "57", "25P03", "40")


def is_unavailable(exc: BaseException) -> bool:
    """True when ``exc`` means the database is unreachable or refused for now (an outage)."""
    if not isinstance(exc, LOST_SESSION):
        return False
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(UNAVAILABLE_SQLSTATES)  # None: client-side, no reply


GENERIC_POOL_SIZE = 3  # the claim loop, the checkpoint writer, a spare


def session_options(dsn: str) -> str:
    """Server options for pgtasks' sessions, after any the URL sets.

    - JIT off: every statement here is a short OLTP one, and a claim whose estimated cost
      passes jit_above_cost (the partitioned claim on a big backlog) would spend 50 to 200 ms
      compiling code it then runs for 2 ms.
    - ``idle_in_transaction_session_timeout``: pgtasks never waits on anything inside its own
      transactions, so one idle for that long belongs to a process that is frozen or cut off
      from the server. Its row locks would otherwise block the others' recovery until TCP
      gives up (hours); the server ends the session instead.
    """
    own = conninfo_to_dict(dsn).get("options") or ""
    return f"{own} -c jit=off -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}".strip()


class PostgresListener(EnqueueListener):
    """LISTEN on the schema's channel over a dedicated autocommit connection."""

    def __init__(self, target: DatabaseTarget, channel: str) -> None:
        try:
            self._conn = psycopg.connect(target.dsn, autocommit=True, connect_timeout=10)
            self._conn.execute(f"LISTEN {quote_identifier(channel, 'channel name')}")
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"cannot listen on {target.display_url}: {exc}") from exc

    def wait(self, timeout: float) -> set[str]:
        try:
            return {n.payload for n in self._conn.notifies(timeout=timeout, stop_after=1)} | {
                n.payload for n in self._conn.notifies(timeout=0)
            }
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"listener connection lost: {exc}") from exc

    def close(self) -> None:
        self._conn.close()


class PostgresSessions:
    """Connection pools and statement runners; the dialect class provides ``target`` and
    ``sql`` (the named statements)."""

    target: DatabaseTarget
    sql: dict[str, str]

    def _open_sessions(self, pool_size: int, pool_wait_seconds: float | None = None) -> None:
        self._pool_size = pool_size
        self._pool_wait = POOL_WAIT_SECONDS if pool_wait_seconds is None else pool_wait_seconds
        self._pools: dict[bool, ConnectionPool] = {}
        self._pool_lock = threading.Lock()

    def _close_sessions(self) -> None:
        with self._pool_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()

    def _connect_kwargs(self) -> dict[str, Any]:
        return {
            "row_factory": dict_row,
            "application_name": "pgtasks",
            "options": session_options(self.target.dsn),
        }

    def _pool_kwargs(self, generic: bool = False) -> dict[str, Any]:
        # Autocommit: a single-statement operation is one round trip (no BEGIN, no COMMIT);
        # operations of several statements open a transaction explicitly (_tx).
        kwargs = {**self._connect_kwargs(), "autocommit": True}
        if generic:
            kwargs["options"] += " -c plan_cache_mode=force_generic_plan"
        return kwargs

    def _open_pool(self, generic: bool = False) -> ConnectionPool:
        pool = self._pools.get(generic)
        if pool is not None:
            return pool
        with self._pool_lock:
            if generic not in self._pools:
                self._pools[generic] = ConnectionPool(
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
    def _conn(self, generic: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection. A lost connection or an unreachable server
        surfaces as DatabaseUnavailable; the pool drops broken connections when they return."""
        try:
            with self._open_pool(generic).connection() as conn:
                yield conn
        except (*LOST_SESSION, PoolTimeout) as exc:
            if not isinstance(exc, PoolTimeout) and not is_unavailable(exc):
                raise
            raise DatabaseUnavailable(
                f"the pgtasks database {self.target.display_url} is unavailable: {exc}"
            ) from exc

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
        """One statement in autocommit. A connection that broke while idle in the pool (a
        server restart, an idle timeout) is retried once on a fresh one, after the pool has
        replaced every broken idle connection: every statement run here is safe to repeat
        (reads, and writes that are idempotent or fenced)."""
        for attempt in (1, 2):
            try:
                with self._open_pool(generic).connection() as conn:
                    return fetch(conn.execute(self.sql[name], params or {}))
            # PoolTimeout first: it is an OperationalError too, raised before any connection
            # is bound, so the retry test below must never see it.
            except PoolTimeout as exc:
                raise DatabaseUnavailable(
                    f"the pgtasks database {self.target.display_url} is unavailable: {exc}"
                ) from exc
            except LOST_SESSION as exc:
                if not is_unavailable(exc):
                    raise
                if attempt == 2 or not conn.broken:
                    raise DatabaseUnavailable(
                        f"the pgtasks database {self.target.display_url} is unavailable: {exc}"
                    ) from exc
                self._open_pool(generic).check()
        raise AssertionError("unreachable")

    def _all(
        self, name: str, params: dict[str, Any] | None = None, generic: bool = False
    ) -> list[dict[str, Any]]:
        return self._run(name, params, lambda cur: cur.fetchall(), generic)

    def _one(self, name: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        return self._run(name, params, lambda cur: cur.fetchone())

    def _count(self, name: str, params: dict[str, Any] | None = None) -> int:
        return self._run(name, params, lambda cur: cur.rowcount)
