"""The SQL system database, written once for both dialects over their primitives.

:class:`SqlStore` holds every method whose logic is the same on PostgreSQL and SQLite: the
statements differ in text (``sql/postgres.sql``, ``sql/sqlite.sql``, same names), not in how
they are called. It is made of the completion (``completion.py``), links (``links.py``),
events (``events.py``) and schedules (``schedules.py``) modules; a dialect subclasses it and
supplies the primitives of ``primitives.py`` plus what really differs: enqueue, claim, the
batched completion, migrate, listen, and its sessions.
"""

from __future__ import annotations

import uuid
from typing import Any

from pgtasks.sysdb.commands import CommandStore
from pgtasks.sysdb.completion import CompletionStore
from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.events import EventStore
from pgtasks.sysdb.interface import SystemDatabase
from pgtasks.sysdb.queues import check_queue_settings, upsert_params
from pgtasks.sysdb.records import (
    RECENT_ORDERS,
    ClaimParams,
    CompleteParams,
    ExecutorInfo,
    ForkParams,
    LinkResolver,
    ListTasksParams,
    MigrationInfo,
    Outcome,
    QueueActivity,
    QueueLatency,
    QueuePause,
    QueueSettings,
    QueueStats,
    QueueUpsert,
    RecentTasksParams,
    RecoverOwnParams,
    RecoverStaleParams,
    RecoveryReport,
    ReleaseStrayParams,
    Status,
    StepRecord,
    StepWrite,
    TaskRecord,
)
from pgtasks.sysdb.retention import RetentionStore
from pgtasks.sysdb.rows import (
    executor_from_row,
    queue_from_row,
    recovery_report,
    step_from_row,
    task_from_row,
)
from pgtasks.sysdb.schedules import ScheduleStore
from pgtasks.sysdb.waiting import WaitingStore


class SqlStore(
    CompletionStore, EventStore, CommandStore, ScheduleStore, RetentionStore, WaitingStore, SystemDatabase
):
    """The methods of :class:`SystemDatabase` both dialects share."""

    # -- schema -------------------------------------------------------------------------
    def migrations_applied(self) -> list[MigrationInfo]:
        return [MigrationInfo(r["version"], r["name"]) for r in self._read("migrations_applied")]

    # -- tasks --------------------------------------------------------------------------
    def task_get(self, task_id: str) -> TaskRecord | None:
        rows = self._read("task_get", {"task_id": task_id})
        return task_from_row(rows[0]) if rows else None

    def tasks_list(self, params: ListTasksParams) -> list[TaskRecord]:
        args = {
            "status": self._list([str(s) for s in params.status]) if params.status else None,
            "name": params.name,
            "queue": params.queue_name,
            "after": params.created_after_epoch_ms,
            "before": params.created_before_epoch_ms,
            "limit": params.limit,
            "executor": params.executor_id,
            "key_created": params.after_key[0] if params.after_key else None,
            "key_seq": params.after_key[1] if params.after_key else None,
        }
        name = "tasks_list_newest" if params.newest_first else "tasks_list_oldest"
        return [task_from_row(r) for r in self._read(name, args)]

    def tasks_recent_ids(self, params: RecentTasksParams) -> list[str]:
        if params.order not in RECENT_ORDERS:
            raise ConfigurationError(f"order must be one of {', '.join(RECENT_ORDERS)}, not {params.order!r}")
        args = {
            "window": params.window,
            "status": self._list([str(s) for s in params.status]) if params.status else None,
            "status_order": self._list([str(s) for s in params.status_order]),
            "name": params.name,
            "executor": params.executor_id,
            "received_after": params.received_after_epoch_ms,
            "received_before": params.received_before_epoch_ms,
            "order": params.order,
            "desc": params.descending,
            "limit": params.limit,
            "offset": params.offset,
        }
        return [r["workflow_uuid"] for r in self._read("tasks_recent_ids", args)]

    def tasks_get_many(self, task_ids: list[str]) -> list[TaskRecord]:
        if not task_ids:
            return []
        return [task_from_row(r) for r in self._read("tasks_get_many", {"ids": self._list(task_ids)})]

    def task_names_recent(self, window: int) -> list[str]:
        return sorted(r["name"] for r in self._read("task_names_recent", {"window": window}))

    def tasks_complete_claim(
        self, complete: CompleteParams, claim: ClaimParams
    ) -> tuple[list[str], list[TaskRecord]]:
        written = self.tasks_complete(complete) if complete.outcomes else []
        return written, self.tasks_claim(claim)

    def tasks_promote_delayed(self) -> int:
        return self._write("tasks_promote_delayed").count

    def tasks_next_due(self, queues: tuple[str, ...]) -> int | None:
        due = self._read("tasks_next_due", {"queues": self._list(list(queues))})[0]["due_in_ms"]
        return None if due is None else max(0, int(due))

    def tasks_promote_due(self, queues: tuple[str, ...]) -> tuple[int, int | None]:
        return self.tasks_promote_delayed(), self.tasks_next_due(queues)

    def queues_announce(self, queues: tuple[str, ...]) -> None:
        return None  # a dialect with notifications overrides this

    def tasks_expire(self, links: LinkResolver | None = None) -> list[str]:
        with self._transaction() as conn:
            rows = self._on(conn, "tasks_expire").fetchall()
            if links is not None:
                error = links.revoked_error(expired=True)
                linked = [r["workflow_uuid"] for r in rows if r["has_links"]]
                ended = [Outcome(task_id, Status.CANCELLED, None, error) for task_id in linked]
                if ended:
                    self._resolve(conn, ended, links)
        return [r["workflow_uuid"] for r in rows]

    def task_cancel(self, task_id: str, links: LinkResolver | None = None) -> bool:
        return self._cancel("task_cancel", {"task_id": task_id}, task_id, links, expired=False)

    def task_expire_claimed(
        self, task_id: str, executor_id: str, claim_token: str | None, links: LinkResolver
    ) -> bool:
        args = {"id": task_id, "executor": executor_id, "token": claim_token}
        return self._cancel("task_expire_claimed", args, task_id, links, expired=True)

    def _cancel(
        self, statement: str, args: dict[str, Any], task_id: str, links: LinkResolver | None, expired: bool
    ) -> bool:
        """Run a statement that cancels one task (``RETURNING has_links``) and resolve what
        waits on it in the same transaction; True if it was cancelled."""
        with self._transaction() as conn:
            row = self._on(conn, statement, args).fetchone()
            if row is not None and row["has_links"] and links is not None:
                error = links.revoked_error(expired=expired)
                self._resolve(conn, [Outcome(task_id, Status.CANCELLED, None, error)], links)
        return row is not None

    def task_revoke_ahead(self, task_id: str, queue_name: str) -> bool:
        return self._write("task_revoke_ahead", {"id": task_id, "queue": queue_name}).count == 1

    def task_resume(self, task_id: str) -> bool:
        return self._write("task_resume", {"task_id": task_id}).count == 1

    def task_fork(self, params: ForkParams) -> TaskRecord:
        args = {
            "new_id": params.new_task_id,
            "source_id": params.source_id,
            "start_step": params.start_step,
            "queue": params.queue_name,
        }
        with self._transaction() as conn:
            row = self._on(conn, "task_fork_insert", args).fetchone()
            if row is None:
                raise KeyError(params.source_id)
            self._on(conn, "task_fork_copy_steps", args)
            return task_from_row(row)

    # -- steps --------------------------------------------------------------------------
    def steps_get(self, task_id: str) -> list[StepRecord]:
        return [step_from_row(r) for r in self._read("steps_get", {"task_id": task_id})]

    def steps_get_many(self, task_ids: list[str]) -> dict[str, list[StepRecord]]:
        found: dict[str, list[StepRecord]] = {task_id: [] for task_id in task_ids}
        if task_ids:
            for row in self._read("steps_get_many", {"task_ids": self._list(task_ids)}):
                found[row["workflow_uuid"]].append(step_from_row(row))
        return found

    def step_record(self, step: StepRecord) -> StepWrite:
        with self._transaction() as conn:
            return self._record_step_on(conn, step)

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
            "details": info.details,
        }
        with self._transaction() as conn:
            previous = self._on(conn, "executor_get", args).fetchone()
            self._on(conn, "executor_upsert", args)
        return executor_from_row(previous) if previous else None

    def executor_heartbeat(self, executor_id: str) -> bool:
        return self._write("executor_heartbeat", {"executor_id": executor_id}).count == 1

    def executor_unregister(self, executor_id: str) -> None:
        self._write("executor_delete", {"executor_id": executor_id})

    def executors_list(self) -> list[ExecutorInfo]:
        return [executor_from_row(r) for r in self._read("executors_list")]

    def tasks_recover_own(self, params: RecoverOwnParams) -> RecoveryReport:
        return recovery_report(self._write("tasks_recover_own", {"executor_id": params.executor_id}).rows)

    def tasks_recover_stale(self, params: RecoverStaleParams) -> RecoveryReport:
        args = {"lease_ms": params.lease_ms, "exclude": params.exclude_executor_id}
        with self._transaction() as conn:
            # An executor recovers nothing while its own lease lapsed or its hold runs
            # (executor_heartbeat): this round may have waited out an outage for a connection.
            if (
                params.exclude_executor_id is not None
                and not self._on(conn, "executor_may_recover", args).fetchone()["may"]
            ):
                return recovery_report([])
            self._on(conn, "executors_delete_stale", args)
            stale = [r["executor_id"] for r in self._on(conn, "executors_without_lease", args).fetchall()]
            if not stale:
                return recovery_report([])
            rows = self._on(conn, "tasks_recover_executors", {"executors": self._list(stale)}).fetchall()
        return recovery_report(rows)

    def tasks_release_stray(self, params: ReleaseStrayParams) -> list[str]:
        args = {
            "executor_id": params.executor_id,
            "keep": self._list(list(params.keep)),
            "older_than_ms": params.older_than_ms,
        }
        return [r["workflow_uuid"] for r in self._write("tasks_release_stray", args).rows]

    # -- queues -------------------------------------------------------------------------
    def queue_upsert(self, params: QueueUpsert) -> QueueSettings:
        check_queue_settings(params.settings)
        with self._transaction() as conn:  # the row is locked from the read to the write
            row = self._on(conn, "queue_get_locked", {"name": params.settings.name}).fetchone()
            args = upsert_params(params, str(uuid.uuid4()), row)
            return queue_from_row(self._on(conn, "queue_upsert", args).fetchone())

    def queues_get(self, names: tuple[str, ...] = ()) -> list[QueueSettings]:
        if not names:
            return [queue_from_row(r) for r in self._read("queue_get_all")]
        return [queue_from_row(r) for r in self._read("queue_get_many", {"names": self._list(list(names))})]

    def queue_stats(self) -> list[QueueStats]:
        counts: dict[str, dict[str, int]] = {}
        oldest: dict[str, int | None] = {}
        for row in self._read("queue_stats"):
            counts.setdefault(row["queue_name"], {})[row["status"]] = int(row["n"])
            if row["status"] == "ENQUEUED":
                oldest[row["queue_name"]] = row["oldest"]
        return [QueueStats(name, counts[name], oldest.get(name)) for name in sorted(counts)]

    def queue_activity(self, window_ms: int, bucket_ms: int) -> list[QueueActivity]:
        rows = self._read("queue_activity", {"window_ms": window_ms, "bucket_ms": bucket_ms})
        return [QueueActivity(r["queue_name"], int(r["bucket"]), r["status"], int(r["n"])) for r in rows]

    def queue_latency(self, window_ms: int, sample: int) -> list[QueueLatency]:
        rows = self._read("queue_latency", {"window_ms": window_ms, "sample": sample})
        return [QueueLatency(r["queue_name"], int(r["n"]), int(r["p50"]), int(r["p95"])) for r in rows]

    def queue_set_paused(self, params: QueuePause) -> QueueSettings:
        args = {"queue_id": str(uuid.uuid4()), "name": params.name, "paused": params.paused}
        with self._transaction() as conn:
            row = self._on(conn, "queue_set_paused", args).fetchall()[0]
            if not params.paused:
                # Idle workers of the queue wake as for a new task instead of at their next poll.
                self._announce_on(conn, params.name)
        return queue_from_row(row)

    # -- versions -----------------------------------------------------------------------
    def version_register(self, version_name: str) -> None:
        self._write("version_register", {"version_id": str(uuid.uuid4()), "version_name": version_name})

    def versions_list(self) -> list[tuple[str, int]]:
        return [(r["version_name"], r["version_timestamp"]) for r in self._read("versions_list")]

    # -- misc ---------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._read("now_ms")[0]["now_ms"])
