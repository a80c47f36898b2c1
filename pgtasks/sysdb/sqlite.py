"""The SQLite dialect of the system database (the embedded default; standard library only).

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
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from pgtasks.sysdb.dedup import enqueue_results, single_task_params
from pgtasks.sysdb.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.sysdb.interface import SystemDatabase
from pgtasks.sysdb.links import LinkStore
from pgtasks.sysdb.queues import SETTABLE, check_queue_settings, settings_params, upsert_sql
from pgtasks.sysdb.records import (
    ClaimParams,
    CompleteParams,
    EnqueueResult,
    ExecutorInfo,
    ForkParams,
    ListTasksParams,
    MigrationInfo,
    NewTask,
    QueueClaim,
    QueueSettings,
    QueueUpsert,
    RecoverOwnParams,
    RecoverStaleParams,
    RecoveryReport,
    ReleaseStrayParams,
    StepRecord,
    StepWrite,
    TaskRecord,
)
from pgtasks.sysdb.rows import (
    executor_from_row,
    existing_step,
    queue_from_row,
    recovery_report,
    step_from_row,
    task_from_row,
    written_step,
)
from pgtasks.sysdb.schedules import ScheduleStore
from pgtasks.sysdb.sqlfiles import load_migrations, load_statements
from pgtasks.sysdb.urls import DatabaseTarget

NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
MIGRATIONS_TABLE = "pgtasks_migrations"
BUSY_TIMEOUT_MS = 30_000


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


class SqliteSystemDatabase(LinkStore, ScheduleStore, SystemDatabase):
    """System database in one SQLite file."""

    def __init__(self, target: DatabaseTarget) -> None:
        self.target = target
        self.path = Path(target.sqlite_path)
        self.sql = load_statements("sqlite", {"__now_ms__": NOW_MS})
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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
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

    def _write_all(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._write() as conn:
            return conn.execute(self.sql[name], params or {}).fetchall()

    def _write_count(self, name: str, params: dict[str, Any] | None = None) -> int:
        with self._write() as conn:
            return conn.execute(self.sql[name], params or {}).rowcount

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> list[MigrationInfo]:
        migrations = load_migrations("sqlite")
        with self._write() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
            )
            done = conn.execute(f"SELECT count(*) AS n FROM {MIGRATIONS_TABLE}").fetchone()["n"]
            applied = []
            for migration in migrations[done:]:
                # executescript() would COMMIT our transaction; run statement by statement.
                for statement in _split_statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, ?, {NOW_MS})",
                    (migration.version, migration.name),
                )
                applied.append(MigrationInfo(migration.version, migration.name))
            return applied

    def migrations_applied(self) -> list[MigrationInfo]:
        rows = self._conn().execute(f"SELECT version, name FROM {MIGRATIONS_TABLE} ORDER BY version")
        return [MigrationInfo(r["version"], r["name"]) for r in rows.fetchall()]

    # -- tasks --------------------------------------------------------------------------
    def tasks_enqueue(self, tasks: list[NewTask], conn: Any = None) -> list[EnqueueResult]:
        if conn is not None:
            raise ConfigurationError(
                "enqueue(conn=...) joins a PostgreSQL transaction; the SQLite database "
                "cannot share a caller's connection"
            )
        if not tasks:
            return []
        with self._write() as db:
            return self._enqueue_on(db, tasks)

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

    def _write_tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._write()

    def _read_rows(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return self._read(name, params)

    def _text_list(self, values: list[str]) -> str:
        return json.dumps(values)

    def task_get(self, task_id: str) -> TaskRecord | None:
        rows = self._read("task_get", {"task_id": task_id})
        return task_from_row(rows[0]) if rows else None

    def tasks_list(self, params: ListTasksParams) -> list[TaskRecord]:
        where, args = [], {}
        if params.status:
            where.append("status IN (SELECT value FROM json_each(:status))")
            args["status"] = json.dumps([str(s) for s in params.status])
        if params.name is not None:
            where.append("name = :name")
            args["name"] = params.name
        if params.queue_name is not None:
            where.append("queue_name = :queue")
            args["queue"] = params.queue_name
        if params.created_after_epoch_ms is not None:
            where.append("created_at >= :after")
            args["after"] = params.created_after_epoch_ms
        if params.created_before_epoch_ms is not None:
            where.append("created_at < :before")
            args["before"] = params.created_before_epoch_ms
        order = "DESC" if params.newest_first else "ASC"
        sql = (
            "SELECT * FROM workflow_status"
            + (" WHERE " + " AND ".join(where) if where else "")
            + f" ORDER BY created_at {order}, rowid {order} LIMIT :limit"
        )
        args["limit"] = params.limit
        return [task_from_row(r) for r in self._conn().execute(sql, args).fetchall()]

    def tasks_claim(self, params: ClaimParams) -> list[TaskRecord]:
        if params.limit <= 0:
            return []
        version = params.application_version
        with self._write() as db:
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
            rows = db.execute(
                self.sql["tasks_claim"],
                {
                    **args,
                    "ids": json.dumps(ids),
                    "executor_id": params.executor_id,
                    "claim_token": params.claim_token,
                },
            ).fetchall()
        # RETURNING has no order; hand tasks out in the order they were picked.
        return sorted((task_from_row(r) for r in rows), key=lambda t: (t.priority, t.enqueue_seq))

    def _complete_plain(self, params: CompleteParams) -> list[str]:
        with self._write() as db:
            return self._complete_on(db, params)

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

    def tasks_promote_delayed(self) -> int:
        return self._write_count("tasks_promote_delayed")

    def tasks_expire(self) -> int:
        return self._write_count("tasks_expire")

    def task_cancel(self, task_id: str) -> bool:
        return self._write_count("task_cancel", {"task_id": task_id}) == 1

    def task_resume(self, task_id: str) -> bool:
        return self._write_count("task_resume", {"task_id": task_id}) == 1

    def task_fork(self, params: ForkParams) -> TaskRecord:
        args = {
            "new_id": params.new_task_id,
            "source_id": params.source_id,
            "start_step": params.start_step,
            "queue": params.queue_name,
        }
        with self._write() as db:
            row = db.execute(self.sql["task_fork_insert"], args).fetchone()
            if row is None:
                raise KeyError(params.source_id)
            db.execute(self.sql["task_fork_copy_steps"], args)
            return task_from_row(row)

    # -- steps --------------------------------------------------------------------------
    def steps_get(self, task_id: str) -> list[StepRecord]:
        return [step_from_row(r) for r in self._read("steps_get", {"task_id": task_id})]

    def steps_get_many(self, task_ids: list[str]) -> dict[str, list[StepRecord]]:
        found: dict[str, list[StepRecord]] = {task_id: [] for task_id in task_ids}
        if task_ids:
            for row in self._read("steps_get_many", {"task_ids": json.dumps(task_ids)}):
                found[row["workflow_uuid"]].append(step_from_row(row))
        return found

    def step_record(self, step: StepRecord) -> StepWrite:
        args = {
            "task_id": step.task_id,
            "function_id": step.function_id,
            "function_name": step.function_name,
            "output": step.output,
            "error": step.error,
            "serialization": step.serialization,
            "started_at": step.started_at_epoch_ms,
            "executor_id": step.executor_id,
            "claim_token": step.claim_token,
        }
        with self._write() as db:
            if db.execute(self.sql["step_record"], args).fetchone():
                status = db.execute(self.sql["task_status"], args).fetchone()
                return written_step(status["status"])
            owner = db.execute(self.sql["step_owner"], args).fetchone()
        return existing_step(owner, step)

    def task_owned_by(self, task_id: str, executor_id: str, claim_token: str | None = None) -> bool:
        args = {"task_id": task_id, "executor_id": executor_id, "claim_token": claim_token}
        return bool(self._read("task_owned_by", args))

    # -- executors and recovery ---------------------------------------------------------
    def executor_register(self, info: ExecutorInfo) -> ExecutorInfo | None:
        args = {
            "executor_id": info.executor_id,
            "hostname": info.hostname,
            "pid": info.pid,
            "version": info.application_version,
            "queues": ",".join(info.queues),
            "lease_ms": info.lease_ms,
        }
        with self._write() as db:
            previous = db.execute(self.sql["executor_get"], args).fetchone()
            db.execute(self.sql["executor_upsert"], args)
        return executor_from_row(previous) if previous else None

    def executor_heartbeat(self, executor_id: str) -> bool:
        return self._write_count("executor_heartbeat", {"executor_id": executor_id}) == 1

    def executor_unregister(self, executor_id: str) -> None:
        self._write_count("executor_delete", {"executor_id": executor_id})

    def executors_list(self) -> list[ExecutorInfo]:
        return [executor_from_row(r) for r in self._read("executors_list")]

    def tasks_recover_own(self, params: RecoverOwnParams) -> RecoveryReport:
        rows = self._write_all(
            "tasks_recover_own",
            {"executor_id": params.executor_id},
        )
        return recovery_report(rows)

    def tasks_recover_stale(self, params: RecoverStaleParams) -> RecoveryReport:
        args = {"lease_ms": params.lease_ms, "exclude": params.exclude_executor_id}
        with self._write() as db:
            db.execute(self.sql["executors_delete_stale"], args)
            rows = db.execute(self.sql["tasks_recover_stale"], args).fetchall()
        return recovery_report(rows)

    # -- queues -------------------------------------------------------------------------
    def queue_upsert(self, params: QueueUpsert) -> QueueSettings:
        check_queue_settings(params.settings)
        changed = frozenset(SETTABLE) if params.changed is None else params.changed
        sql = upsert_sql("queues", ":{}", changed, NOW_MS)
        with self._write() as db:
            db.execute(sql, settings_params(params.settings, str(uuid.uuid4())))
            row = db.execute(self.sql["queue_get"], {"name": params.settings.name}).fetchone()
        return queue_from_row(row)

    def queues_get(self, names: tuple[str, ...] = ()) -> list[QueueSettings]:
        rows = self._read("queue_get_all")
        return [queue_from_row(r) for r in rows if not names or r["name"] in names]

    def tasks_release_stray(self, params: ReleaseStrayParams) -> list[str]:
        args = {
            "executor_id": params.executor_id,
            "keep": json.dumps(list(params.keep)),
            "older_than_ms": params.older_than_ms,
        }
        return [r["workflow_uuid"] for r in self._write_all("tasks_release_stray", args)]

    # -- versions -----------------------------------------------------------------------
    def version_register(self, version_name: str) -> None:
        self._write_count("version_register", {"version_id": str(uuid.uuid4()), "version_name": version_name})

    def versions_list(self) -> list[tuple[str, int]]:
        return [(r["version_name"], r["version_timestamp"]) for r in self._read("versions_list")]

    # -- misc ---------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._read("now_ms")[0]["now_ms"])

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
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while conn.execute("PRAGMA journal_mode").fetchone()["journal_mode"] != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise DatabaseUnavailable(f"cannot switch {conn} to WAL: {exc}") from exc
            time.sleep(0.01)


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
