"""The primitives a dialect gives the shared SQL store, and its hooks for what really differs.

Everything in :class:`pgtasks.sysdb.store.SqlStore` (and in the completion, events, links and
schedules modules it is made of) is written once over four primitives, named the same in
both dialects:

- :meth:`Primitives._read`: the rows of a named statement, outside any write transaction;
- :meth:`Primitives._transaction`: a connection inside one write transaction;
- :meth:`Primitives._on`: a named statement run on that connection (a DB-API cursor);
- :meth:`Primitives._list`: a list of text values encoded as one statement parameter.

Statements are named in ``sql/<dialect>.sql`` and called by name; only the operations whose
SQL has a different shape per dialect are hooks: the insert of tasks (:meth:`_enqueue_on`)
and the batched completion (:meth:`_complete_on`, :meth:`_complete_plain`). Claims,
migrations, wake-ups and sessions live entirely in the dialect classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from pgtasks.sysdb.records import CompleteParams, EnqueueResult, NewTask

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Written:
    """What one write statement did: the rows it returned and the rows it changed."""

    rows: list[Row]
    count: int


class Primitives(ABC):
    """The dialect's primitives and hooks; ``sql`` maps statement names to their text."""

    sql: dict[str, str]

    # -- the four primitives -------------------------------------------------------------
    @abstractmethod
    def _read(self, name: str, params: dict[str, Any] | None = None) -> list[Row]:
        """The rows of the named statement, run outside any write transaction."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Any]:
        """A connection inside one write transaction, committed when the block ends without
        an error and rolled back otherwise."""

    def _on(self, conn: Any, name: str, params: dict[str, Any] | None = None) -> Any:
        """Run the named statement on ``conn`` (from :meth:`_transaction`); return the cursor.
        Both drivers' connections execute named-parameter SQL and return DB-API cursors with
        rows as dicts, so one definition serves both dialects."""
        return conn.execute(self.sql[name], params or {})

    @abstractmethod
    def _list(self, values: list[str]) -> Any:
        """A list of text values as the dialect's statements take it in one parameter."""

    # -- derived ------------------------------------------------------------------------
    def _write(self, name: str, params: dict[str, Any] | None = None) -> Written:
        """One named write statement as its own transaction. A dialect may run it in fewer
        round trips (PostgreSQL: one statement in autocommit, retried on a broken idle
        connection); every statement run here must be safe to repeat."""
        with self._transaction() as conn:
            cur = self._on(conn, name, params)
            rows = cur.fetchall() if cur.description else []
            return Written(rows, cur.rowcount)

    # -- the hooks for what differs -----------------------------------------------------
    @abstractmethod
    def _enqueue_on(self, conn: Any, tasks: list[NewTask]) -> list[EnqueueResult]:
        """Insert ``tasks`` on ``conn`` with the semantics of ``tasks_enqueue``."""

    @abstractmethod
    def _complete_on(self, conn: Any, params: CompleteParams) -> list[str]:
        """Write the outcomes on ``conn`` (the statement of ``tasks_complete``); the ids written."""

    def _complete_plain(self, params: CompleteParams) -> list[str]:
        """``tasks_complete`` of outcomes without links to resolve (a dialect's fast path)."""
        with self._transaction() as conn:
            return self._complete_on(conn, params)

    def _announce_on(self, conn: Any, queue: str) -> None:
        """Wake the workers of ``queue`` once ``conn``'s transaction commits (SQLite: workers
        poll, nothing to do)."""
        return None
