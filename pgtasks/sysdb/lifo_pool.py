"""A connection pool that hands out the connection given back last."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import ConnectionPool


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

    def _get_ready_connection(self, timeout: float | None) -> psycopg.Connection[Any] | None:
        # Called with the pool's lock held. The idle connections are a deque that getconn()
        # takes from the left and putconn() appends to on the right; bringing the rightmost
        # to the left keeps the others in the order the pool's shrinking relies on (the
        # leftmost is the one idle longest, and the first it closes).
        idle = self._pool
        if len(idle) > 1:
            idle.rotate(1)
        return super()._get_ready_connection(timeout)
