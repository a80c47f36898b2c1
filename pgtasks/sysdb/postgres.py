"""The PostgreSQL dialect of the system database (psycopg 3 and a connection pool).

The shared logic is in :class:`pgtasks.sysdb.store.SqlStore`; here are the primitives over
psycopg and what is PostgreSQL's own: the one-statement enqueue with its NOTIFY, the claims
(advisory locks for limited queues, generic plans), the batched completion and group commit
of checkpoints, migrations under an advisory lock, and LISTEN.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row, tuple_row

from pgtasks.sysdb import one_call
from pgtasks.sysdb.dedup import (
    all_inserted,
    enqueue_columns,
    enqueue_results,
    may_refuse,
    refuse_duplicates,
    single_task_params,
)
from pgtasks.sysdb.errors import ConfigurationError, DatabaseReadOnly, DatabaseUnavailable
from pgtasks.sysdb.identifiers import quote_identifier, validate_identifier
from pgtasks.sysdb.interface import EnqueueListener
from pgtasks.sysdb.overlapped import enqueue_overlapped
from pgtasks.sysdb.pg_arrays import BoolArray, Int4Array, Int8Array, TextArray
from pgtasks.sysdb.pg_sessions import LOST_SESSION, PostgresListener, PostgresSessions, is_unavailable
from pgtasks.sysdb.primitives import Written
from pgtasks.sysdb.records import (
    ClaimParams,
    CompleteParams,
    EnqueueResult,
    MigrationInfo,
    NewTask,
    QueueClaim,
    StepRecord,
    StepWrite,
    TaskOwner,
    TaskRecord,
)
from pgtasks.sysdb.rows import claimed_columns, claimed_record, existing_step, picking_order, runs_here
from pgtasks.sysdb.sqlfiles import Migration, load_migrations, load_statements, pending_migrations
from pgtasks.sysdb.store import SqlStore
from pgtasks.sysdb.urls import DatabaseTarget
from pgtasks.sysdb.waiting import send_message

# The time the statement started, not the transaction: a claim stamps started_at and the
# rate limiter counts its window on the same clock, so a claim that ran late in its
# transaction (its worker descheduled between the queue lock and the claim) is not stamped
# early, outside the window the next claim counts.
NOW_MS = "(extract(epoch from statement_timestamp()) * 1000)::bigint"
# What a claim returns (rows.CLAIMED_COLUMNS): has_steps from the row as picked.
CLAIMED_COLUMNS = claimed_columns("ws.", {"has_steps": "p.seen_before"})
MIGRATIONS_TABLE = "pgtasks_migrations"
# The rows tasks_enqueue inserts: column arrays for many tasks (one statement, any count), in
# NewTask's field order (enqueue_columns). A column with one value for every task is sent as
# that value (%(<field>_all)s) beside a NULL array, which unnest pads with NULLs: the array is
# not built nor adapted element by element (psycopg does that in Python).
ENQUEUE_MANY = """(SELECT m.task_id, COALESCE(m.name, %(name_all)s::text),
        COALESCE(m.inputs, %(inputs_all)s::text), COALESCE(m.serialization, %(serialization_all)s::text),
        COALESCE(m.queue_name, %(queue_name_all)s::text), COALESCE(m.priority, %(priority_all)s::int),
        COALESCE(m.deduplication_id, %(deduplication_id_all)s::text),
        COALESCE(m.partition_key, %(partition_key_all)s::text),
        COALESCE(m.delay_until_epoch_ms, %(delay_until_epoch_ms_all)s::bigint),
        COALESCE(m.delay_ms, %(delay_ms_all)s::bigint),
        COALESCE(m.application_version, %(application_version_all)s::text),
        COALESCE(m.max_recovery_attempts, %(max_recovery_attempts_all)s::int),
        COALESCE(m.parent_task_id, %(parent_task_id_all)s::text),
        COALESCE(m.expires_at_epoch_ms, %(expires_at_epoch_ms_all)s::bigint),
        COALESCE(m.expires_in_ms, %(expires_in_ms_all)s::bigint), COALESCE(m.meta, %(meta_all)s::text),
        COALESCE(m.retries, %(retries_all)s::int), m.ord
    FROM unnest(%(task_id)b::text[], %(name)b::text[], %(inputs)b::text[], %(queue_name)b::text[],
                %(serialization)b::text[], %(priority)b::int[], %(deduplication_id)b::text[],
                %(partition_key)b::text[], %(delay_ms)b::bigint[], %(delay_until_epoch_ms)b::bigint[],
                %(application_version)b::text[], %(max_recovery_attempts)b::int[],
                %(parent_task_id)b::text[], %(expires_at_epoch_ms)b::bigint[],
                %(expires_in_ms)b::bigint[], %(meta)b::text[], %(retries)b::int[])
         WITH ORDINALITY AS m(task_id, name, inputs, queue_name, serialization, priority,
                              deduplication_id, partition_key, delay_ms, delay_until_epoch_ms,
                              application_version, max_recovery_attempts, parent_task_id,
                              expires_at_epoch_ms, expires_in_ms, meta, retries, ord))"""
# One task: plain parameters (much cheaper to send than seventeen one-element arrays).
ENQUEUE_ONE = """(VALUES (%(id)s::text, %(name)s::text, %(inputs)s::text, %(serialization)s::text,
                %(queue)s::text, %(priority)s::int, %(dedup)s::text, %(partition_key)s::text,
                %(delay_abs)s::bigint, %(delay_rel)s::bigint, %(version)s::text,
                %(max_attempts)s::int, %(parent)s::text, %(expires)s::bigint,
                %(expires_rel)s::bigint, %(meta)s::text, %(retries)s::int, 1::bigint))"""
# In a pure claim (tasks_claim): commit without waiting for the WAL flush (see there).
ASYNC_COMMIT = "CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit"


def advisory_lock_key(schema: str) -> int:
    """A stable signed 64-bit advisory lock key for migrating ``schema``."""
    digest = hashlib.sha256(f"pgtasks-migrate:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def queue_lock_key(schema: str, queue: str) -> int:
    """The advisory lock key that serializes limited claims of one queue."""
    digest = hashlib.sha256(f"pgtasks-queue:{schema}:{queue}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


DONE_LISTENERS_RECHECK = 1.0  # seconds between two reads of whether anyone awaits results


def done_presence_key(schema: str) -> int:
    """The advisory lock that processes awaiting results on the done channel hold shared."""
    return queue_lock_key(schema, "\x00done-listeners")  # no queue name holds a NUL


def notify_channel(schema: str) -> str:
    """The LISTEN/NOTIFY channel on which enqueues of ``schema`` are announced (a long schema
    name is shortened by a hash to stay within PostgreSQL's 63-byte identifiers)."""
    channel = f"pgtasks_{schema}"
    if len(channel) > 63:
        channel = "pgtasks_" + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return validate_identifier(channel, "channel name")


def _filled(template: str, tokens: dict[str, str]) -> str:
    """``template`` with each of ``tokens`` replaced by its text."""
    for token, text in tokens.items():
        template = template.replace(token, text)
    return template


def _conflict_free(tasks: list[NewTask]) -> bool:
    """Whether no task carries a deduplication id (with new ids, no insert can conflict)."""
    return all(task.deduplication_id is None for task in tasks)


def _duplicates_of(tasks: list[NewTask], inserted: set[str]) -> dict[str, Any]:
    """Parameters of ``tasks_find_duplicates`` for the tasks the insert did not make."""
    missing = [t for t in tasks if t.task_id not in inserted]
    return {
        "ids": [t.task_id for t in missing],
        "queues": [t.queue_name for t in missing if t.deduplication_id],
        "dedups": [t.deduplication_id for t in missing if t.deduplication_id],
    }


def events_channel(schema: str) -> str:
    """The channel on which the ids of the tasks of ``schema`` that set an event are announced."""
    channel = f"pgtasks_events_{schema}"
    if len(channel) > 63:
        channel = "pgtasks_events_" + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return validate_identifier(channel, "channel name")


def done_channel(schema: str) -> str:
    """The channel on which the ids of the tasks of ``schema`` that finished are announced."""
    channel = f"pgtasks_done_{schema}"
    if len(channel) > 63:
        channel = "pgtasks_done_" + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return validate_identifier(channel, "channel name")


SAVEPOINT = "pgtasks_enqueue"


def _callers(conn: Any) -> psycopg.Connection[Any]:
    """The caller's ``conn=``, when it is a connection its transaction can be joined on."""
    if not isinstance(conn, psycopg.Connection):
        raise ConfigurationError(f"conn= must be a psycopg.Connection, not {type(conn).__name__}")
    return conn


@contextmanager
def _callers_transaction(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """The caller's connection inside a transaction: in autocommit a new one, else a savepoint
    in its own (opened if none is: psycopg's ``transaction()`` would commit it), so that
    statements on it commit or roll back together, and an error rolls back only them."""
    if conn.autocommit:
        with conn.transaction():
            yield conn
        return
    conn.execute(f"SAVEPOINT {SAVEPOINT}")
    try:
        yield conn
    except BaseException:
        conn.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {SAVEPOINT}")


@asynccontextmanager
async def _callers_transaction_async(
    conn: psycopg.AsyncConnection[Any],
) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """:func:`_callers_transaction` on an async connection."""
    if conn.autocommit:
        async with conn.transaction():
            yield conn
        return
    await conn.execute(f"SAVEPOINT {SAVEPOINT}")
    try:
        yield conn
    except BaseException:
        await conn.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")
        raise
    await conn.execute(f"RELEASE SAVEPOINT {SAVEPOINT}")


class PostgresSystemDatabase(PostgresSessions, SqlStore):
    """System database in a PostgreSQL schema."""

    def __init__(
        self,
        target: DatabaseTarget,
        pool_size: int = 10,
        pool_wait_seconds: float | None = None,
        retry_for: float | None = None,
    ) -> None:
        """``retry_for``: how long operations wait out an outage (default: the reconnect
        deadline, ``PGTASKS_RECONNECT_DEADLINE``)."""
        self.target = target
        self.schema = quote_identifier(target.schema, "schema name")
        self.channel = notify_channel(target.schema)
        self.done_channel = done_channel(target.schema)
        self.events_channel = events_channel(target.schema)
        self._done_checked_at = -DONE_LISTENERS_RECHECK
        self._done_listened = True
        self.sql = load_statements(
            "postgres",
            {"__schema__": self.schema, "__now_ms__": NOW_MS, "__claimed_columns__": CLAIMED_COLUMNS},
        )
        tail = self.sql.pop("claim_picked")
        for name in ("tasks_claim", "tasks_claim_limited", "tasks_claim_partitioned", "tasks_complete_claim"):
            self.sql[name] = self.sql[name].replace("__claim_picked__", tail)
        # A pure claim commits without waiting for its flush; one carrying outcomes waits.
        self.sql["tasks_claim"] = self.sql["tasks_claim"].replace("__async_commit__", ASYNC_COMMIT)
        self.sql["tasks_complete_claim"] = self.sql["tasks_complete_claim"].replace("__async_commit__", "")
        enqueue = self.sql.pop("tasks_enqueue")
        checked = {"__on_conflict__": "ON CONFLICT DO NOTHING", "__returned__": "workflow_uuid"}
        kept = _filled(enqueue, checked)
        new = _filled(enqueue, {"__on_conflict__": "", "__returned__": "count(*)"})
        many = {"__enqueue_source__": ENQUEUE_MANY, "__enqueue_now__": f"(SELECT {NOW_MS})"}
        one = {"__enqueue_source__": ENQUEUE_ONE, "__enqueue_now__": NOW_MS}
        self.sql["tasks_enqueue"] = _filled(kept, many)
        self.sql["tasks_enqueue_one"] = _filled(kept, one)
        self.sql["tasks_enqueue_new"] = _filled(new, many)
        self.sql["tasks_enqueue_one_new"] = _filled(new, one)
        self._open_sessions(pool_size, pool_wait_seconds, retry_for)

    # -- the primitives (primitives.py) ---------------------------------------------------
    def _read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._all(name, params)

    def _transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._tx()

    def _list(self, values: list[str]) -> list[str]:
        return values

    def _write(self, name: str, params: dict[str, Any] | None = None) -> Written:
        # One statement in autocommit: one round trip, retried on a connection broken while idle.
        return self._run(
            name, params, lambda cur: Written(cur.fetchall() if cur.description else [], cur.rowcount)
        )

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> list[MigrationInfo]:
        migrations = load_migrations("postgres")
        try:
            conn = psycopg.connect(self.target.dsn, connect_timeout=10, **self._connect_kwargs())
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"cannot connect to the pgtasks database {self.target.display_url}: {exc}"
            ) from exc
        try:
            with conn:
                if not pending_migrations(migrations, self._applied_versions(conn)):
                    return []  # fast path: no lock when the schema is current
                conn.rollback()
                try:
                    return self._apply(conn, migrations)
                except psycopg.errors.UniqueViolation:
                    # Another process created the schema or its migrations table at the same
                    # moment (seen through a transaction-pooling PgBouncer, where the lock's
                    # transaction and the catalog's view of the other's commit can cross):
                    # its work is committed, so one more pass finds it and does the rest.
                    return self._apply(conn, migrations)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise ConfigurationError(
                f"the schema {self.target.schema!r} needs migrations that this database role "
                f"cannot run ({exc.diag.message_primary}); run `pgtasks migrate` as the role "
                "that owns the schema (see `pgtasks roles`)"
            ) from None
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise DatabaseReadOnly(
                f"the pgtasks database {self.target.display_url} is read-only (a standby, or a "
                f"read-only role or default_transaction_read_only), and the schema {self.target.schema!r} "
                f"needs migrations: {exc}"
            ) from exc
        except LOST_SESSION as exc:  # the server went away after the connection was made
            if not is_unavailable(exc):
                raise
            raise DatabaseUnavailable(
                f"lost the pgtasks database {self.target.display_url} while migrating: {exc}"
            ) from exc

    def _apply(self, conn: psycopg.Connection[Any], migrations: list[Migration]) -> list[MigrationInfo]:
        with conn.transaction():
            # One migrator at a time per schema: the others wait here, then find nothing left
            # to do. CREATE SCHEMA IF NOT EXISTS is not safe to race.
            self._on(conn, "migrate_lock", {"key": advisory_lock_key(self.target.schema)})
            # A schema made by an administrator (`pgtasks roles`) is used as it is: its owner
            # may not be allowed to create schemas in the database.
            if self._on(conn, "schema_exists", {"schema": self.schema}).fetchone()["s"] is None:
                self._on(conn, "schema_create")
            self._on(conn, "migrations_table_create")
            done = self._applied_versions(conn)
            applied = []
            for migration in pending_migrations(migrations, done):
                conn.execute(migration.sql.replace("__schema__", self.schema))
                self._on(conn, "migration_record", {"version": migration.version, "name": migration.name})
                applied.append(MigrationInfo(migration.version, migration.name))
            return applied

    def _applied_versions(self, conn: psycopg.Connection[Any]) -> set[int]:
        row = self._on(
            conn, "migrations_table_exists", {"table": f"{self.schema}.{MIGRATIONS_TABLE}"}
        ).fetchone()
        if row is None or row["t"] is None:
            return set()
        return {int(r["version"]) for r in self._on(conn, "migrations_versions").fetchall()}

    # -- tasks --------------------------------------------------------------------------
    def tasks_enqueue(
        self, tasks: list[NewTask], conn: Any = None, all_or_nothing: bool = False, new_ids: bool = False
    ) -> list[EnqueueResult]:
        if not tasks:
            return []
        if conn is not None:
            conn = _callers(conn)
        if may_refuse(tasks, all_or_nothing):  # one transaction (a savepoint in the caller's)
            if conn is not None:
                return self._enqueue_all_or_nothing(conn, tasks)
            return self._retrying(lambda own: self._enqueue_all_or_nothing(own, tasks))
        if conn is not None:
            return self._enqueue_on(conn, tasks)
        # The task ids were fixed before the insert: an attempt whose reply was lost is found
        # by the next one (ON CONFLICT), so the enqueue is retried through an outage.
        if new_ids and _conflict_free(tasks):
            return self._retrying(lambda own: self._enqueue_new_on(own, tasks))
        return self._retrying(lambda own: self._enqueue_on(own, tasks))

    def _enqueue_new_on(self, conn: psycopg.Connection[Any], tasks: list[NewTask]) -> list[EnqueueResult]:
        """Insert ``tasks`` (new ids, no deduplication id) on the autocommit ``conn`` without
        the conflict check; a retry whose first attempt committed is sent again with it."""
        try:
            if len(tasks) == 1:
                self._insert_one_new(conn, tasks[0])
            else:
                self._insert_unchecked(conn, tasks)
        except psycopg.errors.UniqueViolation:
            return self._enqueue_on(conn, tasks)
        return all_inserted(tasks)

    def _insert_one_new(self, conn: psycopg.Connection[Any], task: NewTask) -> None:
        """:meth:`_insert_unchecked` for one task (``delay()``) on a pooled connection in
        autocommit, in one libpq call (see one_call; the statement is prepared by a failed
        first attempt, which only autocommit survives), interruptible on the main thread."""
        statement = self._one_call_statement("tasks_enqueue_one_new")
        params = {**single_task_params(task), "channel": self.channel}
        main = threading.current_thread() is threading.main_thread()
        one_call.run(conn, statement, params, not self.target.transaction_pooling, interruptible=main)

    def _enqueue_all_or_nothing(
        self, conn: psycopg.Connection[Any], tasks: list[NewTask]
    ) -> list[EnqueueResult]:
        with _callers_transaction(conn):
            return refuse_duplicates(self._enqueue_on(conn, tasks))

    def tasks_enqueue_chunks(
        self,
        chunks: Iterable[list[NewTask]],
        conn: Any = None,
        all_or_nothing: bool = False,
        new_ids: bool = False,
    ) -> list[EnqueueResult]:
        def writer(
            unchecked: bool,
        ) -> Callable[[psycopg.Connection[Any], list[NewTask]], list[EnqueueResult]]:
            def write(on: psycopg.Connection[Any], tasks: list[NewTask]) -> list[EnqueueResult]:
                if unchecked and tasks and _conflict_free(tasks):
                    self._insert_unchecked(on, tasks, own=conn is None)
                    return all_inserted(tasks)
                results = self._enqueue_on(on, tasks)
                return refuse_duplicates(results) if all_or_nothing else results

            return write

        if conn is not None:
            conn = _callers(conn)
        transaction = (lambda: _callers_transaction(conn)) if conn is not None else self._tx
        remaining = iter(chunks)
        sent: list[list[NewTask]] = []

        def recorded() -> Iterator[list[NewTask]]:
            for chunk in remaining:
                sent.append(chunk)
                yield chunk

        try:
            return enqueue_overlapped(recorded(), transaction, writer(new_ids))
        except psycopg.errors.UniqueViolation:
            if not new_ids:
                raise
        # A retry whose first attempt committed (the transaction rolled back): all again,
        # with the conflict check.
        return enqueue_overlapped(itertools.chain(sent, remaining), transaction, writer(False))

    def _send_on_callers(self, conn: Any, args: dict[str, Any], wake: dict[str, Any]) -> bool:
        with _callers_transaction(_callers(conn)) as tx, tx.cursor(row_factory=dict_row) as cur:

            def run(name: str, values: dict[str, Any]) -> list[dict[str, Any]]:
                cur.execute(self.sql[name], values)
                return cur.fetchall() if cur.description else []

            return send_message(run, args, wake)

    def _enqueue_on(self, conn: psycopg.Connection[Any], tasks: list[NewTask]) -> list[EnqueueResult]:
        """Insert ``tasks`` on ``conn``."""
        if not tasks:  # the bulk statement has no parameters to bind for zero rows
            return []
        with conn.cursor(row_factory=tuple_row) as cur:
            # One statement inserts and notifies (autocommit: one round trip; in a caller's
            # transaction the notification is delivered only if that transaction commits).
            if len(tasks) == 1:
                cur.execute(
                    self.sql["tasks_enqueue_one"], {**single_task_params(tasks[0]), "channel": self.channel}
                )
            else:
                cur.execute(self.sql["tasks_enqueue"], {**enqueue_columns(tasks), "channel": self.channel})
            inserted = {row[0] for row in cur.fetchall()}
        existing: list[dict[str, Any]] = []
        if len(inserted) < len(tasks):
            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(self.sql["tasks_find_duplicates"], _duplicates_of(tasks, inserted))
                existing = cur.fetchall()
        return enqueue_results(tasks, inserted, existing)

    def _insert_unchecked(
        self, conn: psycopg.Connection[Any], tasks: list[NewTask], own: bool = True
    ) -> None:
        """Insert ``tasks`` (new ids, no deduplication id) on ``conn`` without the conflict
        check: a conflict fails the statement (see tasks_enqueue_new). On a pooled connection
        (``own``) the statement is prepared at its first use: the pool hands its connections
        out in turn, and psycopg would otherwise parse and plan it (about 0.4 ms of the server)
        five times on each before preparing it; not behind a transaction-pooling PgBouncer."""
        prepare = own and not self.target.transaction_pooling
        if len(tasks) == 1:
            name, params = "tasks_enqueue_one_new", single_task_params(tasks[0])
        else:
            name, params = "tasks_enqueue_new", enqueue_columns(tasks)
        with conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(self.sql[name], {**params, "channel": self.channel}, prepare=prepare or None)

    async def tasks_enqueue_async(
        self, tasks: list[NewTask], conn: Any, all_or_nothing: bool = False
    ) -> list[EnqueueResult]:
        """The same statements as :meth:`_enqueue_on`, on the caller's ``psycopg.AsyncConnection``:
        in its open transaction, or in one of their own if it is in autocommit."""
        if not isinstance(conn, psycopg.AsyncConnection):
            raise ConfigurationError(
                f"conn= must be a psycopg.AsyncConnection here, not {type(conn).__name__}"
            )
        if not tasks:
            return []
        if conn.autocommit or may_refuse(tasks, all_or_nothing):  # a savepoint in the caller's
            async with _callers_transaction_async(conn):
                results = await self._enqueue_on_async(conn, tasks)
                return refuse_duplicates(results) if all_or_nothing else results
        return await self._enqueue_on_async(conn, tasks)

    async def _enqueue_on_async(
        self, conn: psycopg.AsyncConnection[Any], tasks: list[NewTask]
    ) -> list[EnqueueResult]:
        async with conn.cursor(row_factory=dict_row) as cur:
            if len(tasks) == 1:
                name, params = "tasks_enqueue_one", single_task_params(tasks[0])
            else:
                name, params = "tasks_enqueue", enqueue_columns(tasks)
            await cur.execute(self.sql[name], {**params, "channel": self.channel})
            inserted = {row["workflow_uuid"] for row in await cur.fetchall()}
            existing: list[dict[str, Any]] = []
            if len(inserted) < len(tasks):
                await cur.execute(self.sql["tasks_find_duplicates"], _duplicates_of(tasks, inserted))
                existing = await cur.fetchall()
        return enqueue_results(tasks, inserted, existing)

    def tasks_claim(self, params: ClaimParams) -> list[TaskRecord]:
        claims = [c for c in params.claims() if c.limit]
        if params.limit <= 0 or not claims:
            return []
        common = {
            "version": params.application_version,
            "executor_id": params.executor_id,
            "claim_token": params.claim_token,
        }
        rows: list[tuple[Any, ...]] = []
        free = [c for c in claims if not c.is_limited]
        if free:  # one statement in autocommit: one round trip
            rows += self._tuples("tasks_claim", _free_claim_args(params, free), generic=True)
        limited = [c for c in claims if c.is_limited]
        if limited and len(rows) < params.limit:
            # the advisory lock lives until this transaction ends
            with self._tx(generic=True) as conn, conn.cursor(row_factory=tuple_row) as cur:
                for claim in limited:
                    room = min(claim.limit or 0, params.limit - len(rows))
                    if room <= 0:
                        break
                    lock = cur.execute(
                        self.sql["queue_try_lock"],
                        {"lock_key": queue_lock_key(self.target.schema, claim.name)},
                    )
                    if not lock.fetchone()[0]:  # type: ignore[index]
                        continue  # another worker is claiming from this queue right now
                    statement = "tasks_claim_partitioned" if claim.partitioned else "tasks_claim_limited"
                    rows += cur.execute(
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
        return _claimed_in_order(rows, params)

    def tasks_complete_claim(
        self, complete: CompleteParams, claim: ClaimParams
    ) -> tuple[list[str], list[TaskRecord]]:
        claims = [c for c in claim.claims() if c.limit]
        linked = complete.links is not None and any(o.has_links for o in complete.outcomes)
        limited = any(c.is_limited for c in claims)
        if not complete.outcomes or linked or limited or claim.limit <= 0 or not claims:
            return super().tasks_complete_claim(complete, claim)
        args = {**self._complete_args(complete), **_free_claim_args(claim, claims)}
        rows = self._tuples("tasks_complete_claim", args, generic=True)
        written = (rows[0][-1] if rows else None) or []
        return written, _claimed_in_order([r[:-1] for r in rows if r[0] is not None], claim)

    def _complete_plain(self, params: CompleteParams) -> list[str]:
        if not params.outcomes:
            return []
        return [r["workflow_uuid"] for r in self._all("tasks_complete", self._complete_args(params))]

    def _complete_on(self, conn: psycopg.Connection[Any], params: CompleteParams) -> list[str]:
        rows = conn.execute(self.sql["tasks_complete"], self._complete_args(params)).fetchall()
        return [r["workflow_uuid"] for r in rows]

    def _complete_args(self, params: CompleteParams) -> dict[str, Any]:
        outcomes = params.outcomes  # typed arrays: see pg_arrays
        return {
            "executor_id": params.executor_id,
            "ids": TextArray([o.task_id for o in outcomes]),
            "statuses": TextArray([str(o.status) for o in outcomes]),
            "outputs": TextArray([o.output for o in outcomes]),
            "errors": TextArray([o.error for o in outcomes]),
            "tokens": TextArray([o.claim_token for o in outcomes]),
            "retry_in": Int8Array([o.retry_in_ms for o in outcomes]),
            "inputs": TextArray([o.inputs for o in outcomes]),
            "unstarted": BoolArray([o.unstarted for o in outcomes]),
            "queues": TextArray([o.queue for o in outcomes]),
            "priorities": Int4Array([o.priority for o in outcomes]),
            "channel": self.channel,
            "done_channel": self.done_channel,
            "notify_done": self._done_listeners_present(),
        }

    def tasks_promote_due(self, queues: tuple[str, ...]) -> tuple[int, int | None]:
        [row] = self._write("tasks_promote_due", {"queues": list(queues)}).rows
        due = row["due_in_ms"]
        return row["promoted"], None if due is None else max(0, int(due))

    def queues_announce(self, queues: tuple[str, ...]) -> None:
        if queues:
            self._run("queues_announce", {"channel": self.channel, "queues": list(queues)}, lambda cur: None)

    def _announce_on(self, conn: psycopg.Connection[Any], queue: str) -> None:
        conn.execute(self.sql["task_announce"], {"channel": self.channel, "queue": queue})

    # -- steps --------------------------------------------------------------------------
    def steps_record_many(self, steps: list[StepRecord]) -> list[StepWrite]:
        # One statement in autocommit even for one step: step_record's transaction would
        # cost two more round trips (BEGIN, COMMIT). Typed arrays: see pg_arrays.
        task_ids = [s.task_id for s in steps]
        function_ids = [s.function_id for s in steps]
        args = {
            "task_ids": TextArray(task_ids),
            "function_ids": Int4Array(function_ids),
            "names": TextArray([s.function_name for s in steps]),
            "outputs": TextArray([s.output for s in steps]),
            "errors": TextArray([s.error for s in steps]),
            "serializations": TextArray([s.serialization for s in steps]),
            "started": Int8Array([s.started_at_epoch_ms for s in steps]),
            "executors": TextArray([s.executor_id for s in steps]),
            "tokens": TextArray([s.claim_token for s in steps]),
        }
        written: set[tuple[str, int]] = set()
        stopped: set[tuple[str, int]] = set()  # owned, but the task is cancelled
        _, rows = self._one_call("steps_record_many", args, generic=True)
        for task_id, function_id, task_status in rows:
            (written if task_status is None else stopped).add((task_id, function_id))
        owners = {}
        if len(written) < len(steps):
            keys = {"task_ids": task_ids, "function_ids": function_ids}
            owners = {(r["workflow_uuid"], r["function_id"]): r for r in self._all("step_owners", keys)}
        results = []
        for step in steps:
            key = (step.task_id, step.function_id)
            if key in written:
                results.append(StepWrite.RECORDED_STOPPED if key in stopped else StepWrite.RECORDED)
            else:
                results.append(existing_step(owners.get(key), step))
        return results

    def tasks_owned_by(self, owners: list[TaskOwner]) -> list[bool]:
        args = {"task_ids": TextArray([o.task_id for o in owners])}
        columns, rows = self._one_call("tasks_owned_by", args, generic=True)
        found = {r["workflow_uuid"]: r for r in (dict(zip(columns, row, strict=True)) for row in rows)}
        return [runs_here(found.get(o.task_id), o) for o in owners]

    # -- wake-ups -----------------------------------------------------------------------
    def open_listener(self) -> EnqueueListener | None:
        if self.target.transaction_pooling and not self.target.listen_dsn:
            return None  # LISTEN through a transaction pool would lose notifications: poll
        return PostgresListener(self.target, self.channel)

    def open_event_listener(self) -> EnqueueListener | None:
        if self.target.transaction_pooling and not self.target.listen_dsn:
            return None
        return PostgresListener(self.target, self.events_channel)

    def open_done_listener(self) -> EnqueueListener | None:
        if self.target.transaction_pooling and not self.target.listen_dsn:
            return None
        return PostgresListener(self.target, self.done_channel, done_presence_key(self.target.schema))

    def _done_listeners_present(self) -> bool:
        """Whether any process listens for finished tasks (holds the presence lock shared),
        read at most once a second: a NOTIFY makes its transaction's commit wait for every
        other notifying commit (PostgreSQL serializes them on one lock), so the outcomes'
        statement sends the finished ids only when someone awaits them. A waiter that starts
        listening is told within a second; until then it reads its row (done_watch)."""
        now = time.monotonic()
        if now - self._done_checked_at >= DONE_LISTENERS_RECHECK:
            key = done_presence_key(self.target.schema)
            try:
                row = self._one("done_listeners_present", {"key": key})
                self._done_listened = bool(row and row["present"])
            except DatabaseUnavailable:
                self._done_listened = True  # unknown: notify, as before
            self._done_checked_at = now
        return self._done_listened

    def close(self) -> None:
        self._close_sessions()


def _free_claim_args(params: ClaimParams, free: list[QueueClaim]) -> dict[str, Any]:
    """The parameters of a claim of queues without limits (the free_picked fragment)."""
    return {
        "version": params.application_version,
        "executor_id": params.executor_id,
        "claim_token": params.claim_token,
        "queues": TextArray([c.name for c in free]),
        "limits": Int4Array([c.limit for c in free]),
        "limit": params.limit,
    }


def _claimed_in_order(rows: list[tuple[Any, ...]], claim: ClaimParams) -> list[TaskRecord]:
    """RETURNING has no order: the claimed tasks in the order they were picked."""
    claimed_at = time.monotonic()
    return sorted((claimed_record(r, claim, claimed_at) for r in rows), key=picking_order)
