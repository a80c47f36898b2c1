"""The SQLite dialect of the system database (the embedded default; standard library only).

The shared logic is in :class:`pgtasks.sysdb.store.SqlStore`; here are the primitives over
the standard library's driver and what is SQLite's own: one insert per task, claims whose
limits are counted in Python inside the write lock, completion one outcome at a time, and
migrations split into statements.

One connection per thread and process, WAL journal, a busy timeout, and BEGIN IMMEDIATE for
every write transaction: SQLite admits one writer at a time, which makes each fence below
atomic without row locks.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.dedup import enqueue_results, refuse_duplicates, single_task_params
from pgtasks.sysdb.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.sysdb.records import (
    ClaimParams,
    CompleteParams,
    EnqueueResult,
    MigrationInfo,
    NewTask,
    QueueClaim,
    TaskRecord,
)
from pgtasks.sysdb.rows import claimed_columns, claimed_record, picking_order
from pgtasks.sysdb.sqlfiles import load_migrations, load_statements, pending_migrations
from pgtasks.sysdb.store import SqlStore
from pgtasks.sysdb.urls import DatabaseTarget

NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
BUSY_TIMEOUT_MS = 30_000
# What a claim returns (rows.CLAIMED_COLUMNS): the FIFO order is the rowid; whether the task
# has checkpoints is not known here (the worker reads them).
CLAIMED_COLUMNS = claimed_columns("", {"enqueue_seq": "rowid", "has_steps": "NULL"})
WAL_SWITCH_BACKOFF = Backoff(first=0.01, cap=0.1)  # while other processes hold the file


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


class SqliteSystemDatabase(SqlStore):
    """System database in one SQLite file."""

    def __init__(self, target: DatabaseTarget) -> None:
        self.target = target
        self.path = Path(target.sqlite_path)
        self.sql = load_statements("sqlite", {"__now_ms__": NOW_MS, "__claimed_columns__": CLAIMED_COLUMNS})
        self._local = threading.local()
        self._all_connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    # -- connections --------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        # A connection must not cross fork(): a child process opens its own.
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            if self.path.parent and not self.path.parent.exists():
                raise ConfigurationError(
                    f"database URL {self.target.url!r}: folder {str(self.path.parent)!r} does not exist"
                )
            try:
                conn = sqlite3.connect(
                    self.path,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except sqlite3.OperationalError as exc:
                raise DatabaseUnavailable(f"cannot open SQLite database {self.path}: {exc}") from exc
            conn.row_factory = _dict_row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _use_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn, self._local.pid = conn, os.getpid()
            with self._lock:
                self._all_connections.append(conn)
        return conn

    # -- the primitives (primitives.py) ---------------------------------------------------
    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: BEGIN IMMEDIATE takes the write lock up front, so a
        read-then-write inside it never fails with SQLITE_BUSY half-way."""
        conn = self._conn()
        with _unavailable_on_busy(self.path):
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        with _unavailable_on_busy(self.path):
            return self._conn().execute(self.sql[name], params or {}).fetchall()

    def _list(self, values: list[str]) -> str:
        return json.dumps(values)

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> list[MigrationInfo]:
        migrations = load_migrations("sqlite")
        with self._transaction() as conn:
            self._on(conn, "migrations_table_create")
            done = {r["version"] for r in self._on(conn, "migrations_versions").fetchall()}
            applied = []
            for migration in pending_migrations(migrations, done):
                # executescript() would COMMIT our transaction; run statement by statement.
                for statement in _split_statements(migration.sql):
                    conn.execute(statement)
                self._on(conn, "migration_record", {"version": migration.version, "name": migration.name})
                applied.append(MigrationInfo(migration.version, migration.name))
            return applied

    # -- tasks --------------------------------------------------------------------------
    def tasks_enqueue(
        self, tasks: list[NewTask], conn: Any = None, all_or_nothing: bool = False, new_ids: bool = False
    ) -> list[EnqueueResult]:
        if conn is not None:
            raise ConfigurationError(
                "enqueue(conn=...) joins a PostgreSQL transaction; the SQLite database "
                "cannot share a caller's connection"
            )
        if not tasks:
            return []
        with self._transaction() as db:  # one transaction: a refusal rolls the batch back
            results = self._enqueue_on(db, tasks)
            return refuse_duplicates(results) if all_or_nothing else results

    def _enqueue_on(self, db: sqlite3.Connection, tasks: list[NewTask]) -> list[EnqueueResult]:
        inserted: set[str] = set()
        existing: list[dict[str, Any]] = []
        for task in tasks:
            params = single_task_params(task)
            if db.execute(self.sql["task_insert"], params).fetchone():
                inserted.add(task.task_id)
                continue
            existing += db.execute(self.sql["task_find_by_id"], params).fetchall()
            if task.deduplication_id is not None:
                existing += db.execute(self.sql["task_find_by_dedup"], params).fetchall()
        return enqueue_results(tasks, inserted, existing)

    def tasks_claim(self, params: ClaimParams) -> list[TaskRecord]:
        if params.limit <= 0:
            return []
        version = params.application_version
        with self._transaction() as db:
            # One write transaction (the database's single writer lock) holds the counting,
            # the picking and the update together, so the limits are exact; per-queue probes
            # merge into one priority/FIFO order.
            candidates = []
            for claim in params.claims():
                budget = self._claim_budget(db, claim)
                if budget <= 0:
                    continue
                probe = {
                    "version": version,
                    "queue": claim.name,
                    "limit": -1 if claim.partitioned else budget,
                }
                rows = db.execute(self.sql["tasks_claim_candidates"], probe).fetchall()
                if claim.partitioned and claim.concurrency is not None:
                    rows = _within_partition_limits(db, self.sql["queue_running"], claim, rows)
                candidates += rows[:budget]
            candidates.sort(key=lambda r: (r["priority"], r["enqueue_seq"]))
            ids = [r["workflow_uuid"] for r in candidates[: params.limit]]
            args = {"version": version}
            claiming = db.cursor()
            claiming.row_factory = None  # tuples: read by position
            rows = claiming.execute(
                self.sql["tasks_claim"],
                {
                    **args,
                    "ids": json.dumps(ids),
                    "executor_id": params.executor_id,
                    "claim_token": params.claim_token,
                },
            ).fetchall()
        # RETURNING has no order; hand tasks out in the order they were picked.
        claimed_at = time.monotonic()
        return sorted((claimed_record(r, params, claimed_at) for r in rows), key=picking_order)

    def _complete_on(self, db: sqlite3.Connection, params: CompleteParams) -> list[str]:
        written = []
        for o in params.outcomes:
            args = {
                "id": o.task_id,
                "status": str(o.status),
                "output": o.output,
                "error": o.error,
                "executor_id": params.executor_id,
                "token": o.claim_token,
                "retry_in": o.retry_in_ms,
                "inputs": o.inputs,
                "unstarted": o.unstarted,
                "queue": o.queue,
                "priority": o.priority,
            }
            if db.execute(self.sql["task_complete"], args).fetchone():
                written.append(o.task_id)
                if o.retry_in_ms is not None:
                    db.execute(self.sql["steps_clear"], args)
        return written

    def _claim_budget(self, db: sqlite3.Connection, claim: QueueClaim) -> int:
        budget = claim.limit or 0
        if claim.concurrency is not None and not claim.partitioned:
            running = db.execute(self.sql["queue_running"], {"queue": claim.name}).fetchall()
            budget = min(budget, claim.concurrency - sum(r["n"] for r in running))
        if claim.rate_limit_max is not None:
            args = {"queue": claim.name, "period_ms": claim.rate_limit_period_ms or 0}
            started = db.execute(self.sql["queue_started_since"], args).fetchone()["n"]
            budget = min(budget, claim.rate_limit_max - started)
        return budget

    def close(self) -> None:
        with self._lock:
            for conn in self._all_connections:
                conn.close()
            self._all_connections.clear()
        self._local = threading.local()


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (once: the mode is stored in the file). Switching needs the file
    to itself, which the busy timeout does not always wait for when many processes open a new
    database at once, so a refused switch is retried."""
    retry = WAL_SWITCH_BACKOFF.retrying(within=BUSY_TIMEOUT_MS / 1000, last_try_at_deadline=True)
    while conn.execute("PRAGMA journal_mode").fetchone()["journal_mode"] != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            pause = retry.next_delay() if "locked" in str(exc).lower() else None
            if pause is None:
                raise DatabaseUnavailable(f"cannot switch {conn} to WAL: {exc}") from exc
            time.sleep(pause)


def _within_partition_limits(
    db: sqlite3.Connection, running_sql: str, claim: QueueClaim, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Keep the candidates whose rank within their partition key, plus that key's running
    tasks, stays within the queue's concurrency."""
    taken = {r["k"]: r["n"] for r in db.execute(running_sql, {"queue": claim.name})}
    kept = []
    for row in rows:
        if taken.get(row["k"], 0) < (claim.concurrency or 0):
            taken[row["k"]] = taken.get(row["k"], 0) + 1
            kept.append(row)
    return kept


@contextmanager
def _unavailable_on_busy(path: Path) -> Iterator[None]:
    """A database still locked after the busy timeout, or an I/O failure, is unavailable
    (callers retry); SQL errors stay what they are."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if "locked" in text or "busy" in text or "disk i/o" in text or "unable to open" in text:
            raise DatabaseUnavailable(f"SQLite database {path} is unavailable: {exc}") from exc
        raise


def _split_statements(script: str) -> list[str]:
    """Split a migration file into statements (our DDL has no semicolons inside literals)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
