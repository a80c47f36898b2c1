"""The PostgreSQL dialect of the system database (psycopg 3 and a connection pool)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from pgtasks.sysdb.dedup import enqueue_columns, enqueue_results, single_task_params
from pgtasks.sysdb.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.sysdb.identifiers import quote_identifier, validate_identifier
from pgtasks.sysdb.interface import EnqueueListener, SystemDatabase
from pgtasks.sysdb.links import LinkStore
from pgtasks.sysdb.overlapped import enqueue_overlapped
from pgtasks.sysdb.pg_sessions import PostgresListener, PostgresSessions
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
from pgtasks.sysdb.sqlfiles import Migration, load_migrations, load_statements
from pgtasks.sysdb.urls import DatabaseTarget

T = TypeVar("T")
# The time the statement started, not the transaction: a claim stamps started_at and the
# rate limiter counts its window on the same clock, so a claim that ran late in its
# transaction (its worker descheduled between the queue lock and the claim) is not stamped
# early, outside the window the next claim counts.
NOW_MS = "(extract(epoch from statement_timestamp()) * 1000)::bigint"
MIGRATIONS_TABLE = "pgtasks_migrations"
# The rows tasks_enqueue inserts: column arrays for many tasks (one statement, any count), or
# plain parameters for one task (much cheaper to send than fifteen one-element arrays).
ENQUEUE_MANY = """unnest(%(ids)b::text[], %(names)b::text[], %(inputs)b::text[],
                %(serializations)b::text[], %(queues)b::text[], %(priorities)b::int[],
                %(dedups)b::text[], %(partition_keys)b::text[], %(delays_abs)b::bigint[],
                %(delays_rel)b::bigint[], %(versions)b::text[], %(max_attempts)b::int[],
                %(parents)b::text[], %(expires)b::bigint[], %(expires_rel)b::bigint[])
         WITH ORDINALITY"""
ENQUEUE_ONE = """(VALUES (%(id)s::text, %(name)s::text, %(inputs)s::text, %(serialization)s::text,
                %(queue)s::text, %(priority)s::int, %(dedup)s::text, %(partition_key)s::text,
                %(delay_abs)s::bigint, %(delay_rel)s::bigint, %(version)s::text,
                %(max_attempts)s::int, %(parent)s::text, %(expires)s::bigint,
                %(expires_rel)s::bigint, 1::bigint))"""


def advisory_lock_key(schema: str) -> int:
    """A stable signed 64-bit advisory lock key for migrating ``schema``."""
    digest = hashlib.sha256(f"pgtasks-migrate:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def queue_lock_key(schema: str, queue: str) -> int:
    """The advisory lock key that serializes limited claims of one queue."""
    digest = hashlib.sha256(f"pgtasks-queue:{schema}:{queue}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def notify_channel(schema: str) -> str:
    """The LISTEN/NOTIFY channel on which enqueues of ``schema`` are announced (a long schema
    name is shortened by a hash to stay within PostgreSQL's 63-byte identifiers)."""
    channel = f"pgtasks_{schema}"
    if len(channel) > 63:
        channel = "pgtasks_" + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return validate_identifier(channel, "channel name")


@contextmanager
def _callers_transaction(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """The caller's connection inside a transaction: its own open one, or (in autocommit) a
    new one, so that statements on it commit or roll back together."""
    if conn.autocommit:
        with conn.transaction():
            yield conn
    else:
        yield conn


class PostgresSystemDatabase(LinkStore, ScheduleStore, PostgresSessions, SystemDatabase):
    """System database in a PostgreSQL schema."""

    def __init__(self, target: DatabaseTarget, pool_size: int = 10) -> None:
        self.target = target
        self.schema = quote_identifier(target.schema, "schema name")
        self.channel = notify_channel(target.schema)
        self.sql = load_statements("postgres", {"__schema__": self.schema, "__now_ms__": NOW_MS})
        tail = self.sql.pop("claim_picked")
        for name in ("tasks_claim", "tasks_claim_limited", "tasks_claim_partitioned"):
            self.sql[name] = self.sql[name].replace("__claim_picked__", tail)
        enqueue = self.sql.pop("tasks_enqueue")
        self.sql["tasks_enqueue"] = enqueue.replace("__enqueue_source__", ENQUEUE_MANY)
        self.sql["tasks_enqueue_one"] = enqueue.replace("__enqueue_source__", ENQUEUE_ONE)
        self._open_sessions(pool_size)

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> list[MigrationInfo]:
        migrations = load_migrations("postgres")
        try:
            conn = psycopg.connect(self.target.dsn, connect_timeout=10, **self._connect_kwargs())
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"cannot connect to the pgtasks database {self.target.display_url}: {exc}"
            ) from exc
        with conn:
            if self._applied_versions(conn) == len(migrations):
                return []  # fast path: no lock when the schema is current
            conn.rollback()
            try:
                return self._apply(conn, migrations)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise ConfigurationError(
                    f"the schema {self.target.schema!r} needs migrations that this database role "
                    f"cannot run ({exc.diag.message_primary}); run `pgtasks migrate` as the role "
                    "that owns the schema (see `pgtasks roles`)"
                ) from None

    def _apply(self, conn: psycopg.Connection[Any], migrations: list[Migration]) -> list[MigrationInfo]:
        with conn.transaction():
            # One migrator at a time per schema: the others wait here, then find nothing left
            # to do. CREATE SCHEMA IF NOT EXISTS is not safe to race.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [advisory_lock_key(self.target.schema)])
            # A schema made by an administrator (`pgtasks roles`) is used as it is: its owner
            # may not be allowed to create schemas in the database.
            if conn.execute("SELECT to_regnamespace(%s) AS s", [self.schema]).fetchone()["s"] is None:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.schema}.{MIGRATIONS_TABLE} ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
            )
            done = self._applied_versions(conn)
            applied = []
            for migration in migrations[done:]:
                conn.execute(migration.sql.replace("__schema__", self.schema))
                conn.execute(
                    f"INSERT INTO {self.schema}.{MIGRATIONS_TABLE} VALUES (%s, %s, {NOW_MS})",
                    [migration.version, migration.name],
                )
                applied.append(MigrationInfo(migration.version, migration.name))
            return applied

    def _applied_versions(self, conn: psycopg.Connection[Any]) -> int:
        row = conn.execute("SELECT to_regclass(%s) AS t", [f"{self.schema}.{MIGRATIONS_TABLE}"]).fetchone()
        if row is None or row["t"] is None:
            return 0
        found = conn.execute(f"SELECT count(*) AS n FROM {self.schema}.{MIGRATIONS_TABLE}").fetchone()
        return int(found["n"]) if found else 0

    def migrations_applied(self) -> list[MigrationInfo]:
        with self._tx() as conn:
            rows = conn.execute(
                f"SELECT version, name FROM {self.schema}.{MIGRATIONS_TABLE} ORDER BY version"
            ).fetchall()
        return [MigrationInfo(r["version"], r["name"]) for r in rows]

    # -- tasks --------------------------------------------------------------------------
    def tasks_enqueue(self, tasks: list[NewTask], conn: Any = None) -> list[EnqueueResult]:
        if not tasks:
            return []
        if conn is not None:
            return self._enqueue_on(conn, tasks)
        with self._conn() as own:
            return self._enqueue_on(own, tasks)

    def tasks_enqueue_chunks(self, chunks: Iterable[list[NewTask]], conn: Any = None) -> list[EnqueueResult]:
        if conn is not None:
            return enqueue_overlapped(chunks, lambda: _callers_transaction(conn), self._enqueue_on)
        return enqueue_overlapped(chunks, self._tx, self._enqueue_on)

    def _write_tx(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._tx()

    def _read_rows(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return self._all(name, params)

    def _text_list(self, values: list[str]) -> list[str]:
        return values

    def _enqueue_on(self, conn: psycopg.Connection[Any], tasks: list[NewTask]) -> list[EnqueueResult]:
        columns = enqueue_columns(tasks) if len(tasks) > 1 else {}
        with conn.cursor(row_factory=dict_row) as cur:
            # One statement inserts and notifies (autocommit: one round trip; in a caller's
            # transaction the notification is delivered only if that transaction commits).
            if len(tasks) == 1:
                cur.execute(
                    self.sql["tasks_enqueue_one"], {**single_task_params(tasks[0]), "channel": self.channel}
                )
            else:
                cur.execute(self.sql["tasks_enqueue"], {**columns, "channel": self.channel})
            inserted = {row["workflow_uuid"] for row in cur.fetchall()}
            existing: list[dict[str, Any]] = []
            if len(inserted) < len(tasks):
                missing = [t for t in tasks if t.task_id not in inserted]
                cur.execute(
                    self.sql["tasks_find_duplicates"],
                    {
                        "ids": [t.task_id for t in missing],
                        "queues": [t.queue_name for t in missing if t.deduplication_id],
                        "dedups": [t.deduplication_id for t in missing if t.deduplication_id],
                    },
                )
                existing = cur.fetchall()
        return enqueue_results(tasks, inserted, existing)

    def task_get(self, task_id: str) -> TaskRecord | None:
        row = self._one("task_get", {"task_id": task_id})
        return task_from_row(row) if row else None

    def tasks_list(self, params: ListTasksParams) -> list[TaskRecord]:
        where, args = [], {}
        if params.status:
            where.append("status = ANY(%(status)b::text[])")
            args["status"] = [str(s) for s in params.status]
        for column, key, value in (
            ("name", "name", params.name),
            ("queue_name", "queue", params.queue_name),
        ):
            if value is not None:
                where.append(f"{column} = %({key})s")
                args[key] = value
        if params.created_after_epoch_ms is not None:
            where.append("created_at >= %(after)s")
            args["after"] = params.created_after_epoch_ms
        if params.created_before_epoch_ms is not None:
            where.append("created_at < %(before)s")
            args["before"] = params.created_before_epoch_ms
        order = "DESC" if params.newest_first else "ASC"
        sql = (
            f"SELECT * FROM {self.schema}.workflow_status"
            + (" WHERE " + " AND ".join(where) if where else "")
            + f" ORDER BY created_at {order}, enqueue_seq {order} LIMIT %(limit)s"
        )
        args["limit"] = params.limit
        with self._tx() as conn:
            return [task_from_row(r) for r in conn.execute(sql, args).fetchall()]

    def tasks_claim(self, params: ClaimParams) -> list[TaskRecord]:
        claims = [c for c in params.claims() if c.limit]
        if params.limit <= 0 or not claims:
            return []
        common = {
            "version": params.application_version,
            "executor_id": params.executor_id,
            "claim_token": params.claim_token,
        }
        rows: list[dict[str, Any]] = []
        free = [c for c in claims if not c.is_limited]
        if free:  # one statement in autocommit: one round trip
            rows += self._all(
                "tasks_claim",
                {
                    **common,
                    "queues": [c.name for c in free],
                    "limits": [c.limit for c in free],
                    "limit": params.limit,
                },
                generic=True,
            )
        limited = [c for c in claims if c.is_limited]
        if limited and len(rows) < params.limit:
            with self._tx(generic=True) as conn:  # the advisory lock lives until this transaction ends
                for claim in limited:
                    room = min(claim.limit or 0, params.limit - len(rows))
                    if room <= 0:
                        break
                    lock = conn.execute(
                        self.sql["queue_try_lock"],
                        {"lock_key": queue_lock_key(self.target.schema, claim.name)},
                    )
                    if not lock.fetchone()["ok"]:  # type: ignore[index]
                        continue  # another worker is claiming from this queue right now
                    statement = "tasks_claim_partitioned" if claim.partitioned else "tasks_claim_limited"
                    rows += conn.execute(
                        self.sql[statement],
                        {
                            **common,
                            "queue": claim.name,
                            "limit": room,
                            "concurrency": claim.concurrency,
                            "rate_max": claim.rate_limit_max,
                            "period_ms": claim.rate_limit_period_ms or 0,
                        },
                    ).fetchall()
        # RETURNING has no order; hand tasks out in the order they were picked.
        return sorted((task_from_row(r) for r in rows), key=lambda t: (t.priority, t.enqueue_seq))

    def _complete_plain(self, params: CompleteParams) -> list[str]:
        if not params.outcomes:
            return []
        return [r["workflow_uuid"] for r in self._all("tasks_complete", self._complete_args(params))]

    def _complete_on(self, conn: psycopg.Connection[Any], params: CompleteParams) -> list[str]:
        rows = conn.execute(self.sql["tasks_complete"], self._complete_args(params)).fetchall()
        return [r["workflow_uuid"] for r in rows]

    def _complete_args(self, params: CompleteParams) -> dict[str, Any]:
        return {
            "executor_id": params.executor_id,
            "ids": [o.task_id for o in params.outcomes],
            "statuses": [str(o.status) for o in params.outcomes],
            "outputs": [o.output for o in params.outcomes],
            "errors": [o.error for o in params.outcomes],
            "tokens": [o.claim_token for o in params.outcomes],
            "retry_in": [o.retry_in_ms for o in params.outcomes],
            "inputs": [o.inputs for o in params.outcomes],
            "channel": self.channel,
        }

    def _announce_on(self, conn: psycopg.Connection[Any], queue: str) -> None:
        conn.execute(self.sql["task_announce"], {"channel": self.channel, "queue": queue})

    def tasks_promote_delayed(self) -> int:
        return self._count("tasks_promote_delayed")

    def tasks_expire(self) -> int:
        return self._count("tasks_expire")

    def task_cancel(self, task_id: str) -> bool:
        return self._count("task_cancel", {"task_id": task_id}) == 1

    def task_resume(self, task_id: str) -> bool:
        return self._count("task_resume", {"task_id": task_id}) == 1

    def task_fork(self, params: ForkParams) -> TaskRecord:
        args = {
            "new_id": params.new_task_id,
            "source_id": params.source_id,
            "start_step": params.start_step,
            "queue": params.queue_name,
        }
        with self._tx() as conn:
            row = conn.execute(self.sql["task_fork_insert"], args).fetchone()
            if row is None:
                raise KeyError(params.source_id)
            conn.execute(self.sql["task_fork_copy_steps"], args)
            return task_from_row(row)

    # -- steps --------------------------------------------------------------------------
    def steps_get(self, task_id: str) -> list[StepRecord]:
        return [step_from_row(r) for r in self._all("steps_get", {"task_id": task_id})]

    def steps_get_many(self, task_ids: list[str]) -> dict[str, list[StepRecord]]:
        found: dict[str, list[StepRecord]] = {task_id: [] for task_id in task_ids}
        if task_ids:
            for row in self._all("steps_get_many", {"task_ids": task_ids}):
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
        with self._tx() as conn:
            row = conn.execute(self.sql["step_record"], args).fetchone()
            if row is not None:
                return written_step(row["task_status"])
            owner = conn.execute(self.sql["step_owner"], args).fetchone()
        return existing_step(owner, step)

    def steps_record_many(self, steps: list[StepRecord]) -> list[StepWrite]:
        if len(steps) == 1:
            return [self.step_record(steps[0])]
        keys = {"task_ids": [s.task_id for s in steps], "function_ids": [s.function_id for s in steps]}
        args = {
            **keys,
            "names": [s.function_name for s in steps],
            "outputs": [s.output for s in steps],
            "errors": [s.error for s in steps],
            "serializations": [s.serialization for s in steps],
            "started": [s.started_at_epoch_ms for s in steps],
            "executors": [s.executor_id for s in steps],
            "tokens": [s.claim_token for s in steps],
        }
        written = {
            (r["workflow_uuid"], r["function_id"]): r["task_status"]
            for r in self._all("steps_record_many", args, generic=True)
        }
        owners = {}
        if len(written) < len(steps):
            owners = {(r["workflow_uuid"], r["function_id"]): r for r in self._all("step_owners", keys)}
        results = []
        for step in steps:
            key = (step.task_id, step.function_id)
            if key in written:
                results.append(written_step(written[key]))
            else:
                results.append(existing_step(owners.get(key), step))
        return results

    def task_owned_by(self, task_id: str, executor_id: str, claim_token: str | None = None) -> bool:
        args = {"task_id": task_id, "executor_id": executor_id, "claim_token": claim_token}
        return self._one("task_owned_by", args) is not None

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
        with self._tx() as conn:
            previous = conn.execute(self.sql["executor_get"], args).fetchone()
            conn.execute(self.sql["executor_upsert"], args)
        return executor_from_row(previous) if previous else None

    def executor_heartbeat(self, executor_id: str) -> bool:
        return self._count("executor_heartbeat", {"executor_id": executor_id}) == 1

    def executor_unregister(self, executor_id: str) -> None:
        self._count("executor_delete", {"executor_id": executor_id})

    def executors_list(self) -> list[ExecutorInfo]:
        return [executor_from_row(r) for r in self._all("executors_list")]

    def tasks_recover_own(self, params: RecoverOwnParams) -> RecoveryReport:
        rows = self._all(
            "tasks_recover_own",
            {"executor_id": params.executor_id},
        )
        return recovery_report(rows)

    def tasks_recover_stale(self, params: RecoverStaleParams) -> RecoveryReport:
        args = {"lease_ms": params.lease_ms, "exclude": params.exclude_executor_id}
        with self._tx() as conn:
            conn.execute(self.sql["executors_delete_stale"], args)
            stale = [r["executor_id"] for r in conn.execute(self.sql["executors_without_lease"], args)]
            if not stale:
                return recovery_report([])
            rows = conn.execute(self.sql["tasks_recover_executors"], {"executors": stale}).fetchall()
        return recovery_report(rows)

    def tasks_release_stray(self, params: ReleaseStrayParams) -> list[str]:
        args = {
            "executor_id": params.executor_id,
            "keep": list(params.keep),
            "older_than_ms": params.older_than_ms,
        }
        return [r["workflow_uuid"] for r in self._all("tasks_release_stray", args)]

    # -- queues -------------------------------------------------------------------------
    def queue_upsert(self, params: QueueUpsert) -> QueueSettings:
        check_queue_settings(params.settings)
        changed = frozenset(SETTABLE) if params.changed is None else params.changed
        sql = upsert_sql(f"{self.schema}.queues", "%({})s", changed, NOW_MS) + " RETURNING *"
        with self._tx() as conn:
            row = conn.execute(sql, settings_params(params.settings, str(uuid.uuid4()))).fetchone()
        assert row is not None
        return queue_from_row(row)

    def queues_get(self, names: tuple[str, ...] = ()) -> list[QueueSettings]:
        if not names:
            return [queue_from_row(r) for r in self._all("queue_get_all")]
        return [queue_from_row(r) for r in self._all("queue_get_many", {"names": list(names)})]

    # -- versions -----------------------------------------------------------------------
    def version_register(self, version_name: str) -> None:
        self._count("version_register", {"version_id": str(uuid.uuid4()), "version_name": version_name})

    def versions_list(self) -> list[tuple[str, int]]:
        return [(r["version_name"], r["version_timestamp"]) for r in self._all("versions_list")]

    # -- wake-ups -----------------------------------------------------------------------
    def open_listener(self) -> EnqueueListener:
        return PostgresListener(self.target, self.channel)

    # -- misc ---------------------------------------------------------------------------
    def now_ms(self) -> int:
        row = self._one("now_ms")
        assert row is not None
        return int(next(iter(row.values())))

    def close(self) -> None:
        self._close_sessions()
