"""A connection pool that hands out the connection given back last."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

T = TypeVar("T")
POOL_NAME = "pgtasks"  # every pgtasks pool's name starts so (see _QuietDiscards)


class LifoConnectionPool(ConnectionPool):
    """psycopg_pool's ``ConnectionPool``, except that ``getconn()`` takes the idle connection
    given back most recently (last in, first out) where psycopg_pool takes the one idle
    longest (first in, first out).

    One thread sending statements one after the other (a ``delay()`` loop, a bulk enqueue in
    calls of 100) then runs them all on one session, whose server process and both sides'
    caches are warm, instead of on each pooled session in turn: on 2 cores a single
    ``delay()`` costs about a fifth less CPU on each side (docs/performance.md, "The pool's
    order"). The sessions a quieter load no longer needs stay at the far end, idle, where
    the pool's ``max_idle`` closes them; whatever reopens one checks it as before."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        logging.getLogger("psycopg.pool").addFilter(QUIET_DISCARDS)  # once: the same filter
        super().__init__(*args, **kwargs)

    def _get_ready_connection(self, timeout: float | None) -> psycopg.Connection[Any] | None:
        # Called with the pool's lock held. The idle connections are a deque that getconn()
        # takes from the left and putconn() appends to on the right; bringing the rightmost
        # to the left keeps the others in the order the pool's shrinking relies on (the
        # leftmost is the one idle longest, and the first it closes).
        idle = self._pool
        if len(idle) > 1:
            idle.rotate(1)
        return super()._get_ready_connection(timeout)

    def check(self) -> None:
        _quietly(super().check)

    def putconn(self, conn: psycopg.Connection[Any]) -> None:
        _quietly(lambda: super(LifoConnectionPool, self).putconn(conn))


class _QuietDiscards(logging.Filter):
    """psycopg_pool warns of every dead connection it drops and of every failed attempt to open
    one: a line per pooled session at each server restart or ``pg_terminate_backend`` (about 300
    a minute from a worker whose sessions an operator keeps ending), and one per pool and
    attempt while the server is down, where pgtasks already says once per outage that the
    database is unavailable and once that it is back. Those lines of pgtasks' pools (the drops
    logged while one checks its sessions or takes one back; the attempts of the pools named
    ``pgtasks...``) show only with psycopg.pool's debug on; any other pool's, and every other
    line (the pool giving up on reconnecting among them), pass as they are."""

    DROPS = ("discarding broken connection", "discarding closed connection")
    ATTEMPT = "error connecting in %r"

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._ours(record):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)

    def _ours(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if message.startswith(self.DROPS):
            return bool(getattr(_QUIET, "on", False))
        pool = record.args[0] if isinstance(record.args, tuple) and record.args else None
        return message.startswith(self.ATTEMPT) and str(pool).startswith(POOL_NAME)


def _quietly(call: Callable[[], T]) -> T:
    """``call()``, its dropped connections logged at debug (see :class:`_QuietDiscards`)."""
    _QUIET.on = True
    try:
        return call()
    finally:
        _QUIET.on = False


QUIET_DISCARDS = _QuietDiscards()
_QUIET = threading.local()  # .on: this thread is inside _quietly
