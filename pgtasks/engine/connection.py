"""The engine's handle on the system database: opened and migrated on first use, shared by
the engines derived from one another (so a derived engine never opens a second pool), with
the process's group-commit checkpoint writer.

It is the one way to the system database inside the engine: the engine hands it to its
facades (``WorkerApi``, ``TaskAdmin``, ``ScheduleStore``) and its modules reach it as
``engine.database``; each call reads :attr:`DatabaseHandle.sysdb` anew, so a forked child
that dropped its parent's connections (:meth:`DatabaseHandle.forget`) opens its own."""

from __future__ import annotations

import threading
from collections.abc import Awaitable

from pgtasks.engine.checkpoints import CheckpointWriter
from pgtasks.engine.done_watch import DoneWatch
from pgtasks.sysdb import SystemDatabase, open_replica, open_system_database
from pgtasks.sysdb.records import MigrationInfo, StepRecord, StepWrite, TaskOwner
from pgtasks.sysdb.urls import DatabaseTarget, parse_database_url


class DatabaseHandle:
    """One system database (URL, schema, pool size), connected lazily."""

    def __init__(self, url: str, schema: str, pool_size: int) -> None:
        self.url = url
        self.schema = schema
        self.pool_size = pool_size
        self.target: DatabaseTarget = parse_database_url(url, schema)
        self._db: SystemDatabase | None = None
        self._checkpoints: CheckpointWriter | None = None
        # True in a process that runs one task at a time (a prefork child): there is no other
        # task's checkpoint to share a commit with, so each is written on the task's own thread.
        self.inline_checkpoints = False
        self._done_watch: DoneWatch | None = None
        self._replica: SystemDatabase | None = None
        self._lock = threading.Lock()

    def serves(self, url: str, schema: str, pool_size: int) -> bool:
        """Whether an engine with these settings may share this handle."""
        return (url, schema, pool_size) == (self.url, self.schema, self.pool_size)

    @property
    def sysdb(self) -> SystemDatabase:
        """The system database, connected and migrated on first use."""
        db = self._db
        if db is None:
            with self._lock:
                if self._db is None:
                    fresh = self._open()
                    fresh.migrate()
                    self._db = fresh
                db = self._db
        return db

    def migrate(self) -> list[MigrationInfo]:
        """Apply the migrations the database lacks; return those applied now."""
        with self._lock:
            db = self._db if self._db is not None else self._open()
            applied = db.migrate()
            self._db = db
        return applied

    def pending_migrations(self) -> tuple[DatabaseTarget, set[int]]:
        """The target and the numbers of the migrations it has applied (none for a new
        database), read without migrating anything."""
        db = self._open()
        try:
            try:
                applied = {m.version for m in db.migrations_applied()}
            except Exception:  # no migrations table yet: a new database
                applied = set()
            return db.target, applied
        finally:
            db.close()

    def record_step(self, step: StepRecord) -> StepWrite:
        """Record a step checkpoint, sharing the commit with other tasks of this process (or,
        with ``inline_checkpoints``, on this thread: no hand-off to a writer thread and back)."""
        if self.inline_checkpoints:
            return self.sysdb.steps_record_many([step])[0]
        return self.checkpoints().record(step)

    def record_step_async(self, step: StepRecord) -> Awaitable[StepWrite]:
        """:meth:`record_step` for an event loop: a future to await instead of blocking."""
        return self.checkpoints().record_async(step)

    def owned_async(self, owner: TaskOwner) -> Awaitable[bool]:
        """Whether the task still runs on ``owner``, read with the other coroutines' reads
        by the checkpoint writer: a future for an event loop to await instead of blocking."""
        return self.checkpoints().owned_async(owner)

    def checkpoints(self) -> CheckpointWriter:
        """The process's group-commit checkpoint writer, started on first use."""
        writer = self._checkpoints
        if writer is None:
            db = self.sysdb
            with self._lock:
                if self._checkpoints is None:
                    self._checkpoints = CheckpointWriter(db)
                writer = self._checkpoints
        return writer

    def reader(self) -> SystemDatabase:
        """Where reads that may lag go: the replica of ``?read_url=``, else the database itself.
        The replica is never migrated (it follows the primary's schema) nor written."""
        if not self.target.read_url:
            return self.sysdb
        with self._lock:
            if self._replica is None:
                self._replica = open_replica(self.target.read_url, self.target.schema)
            return self._replica

    def done_watch(self) -> DoneWatch:
        """The process's listener for finished tasks (what ``get_async`` waits on)."""
        with self._lock:
            if self._done_watch is None:
                self._done_watch = DoneWatch(lambda: self.sysdb)
            return self._done_watch

    def forget(self) -> None:
        """In a forked child: drop the parent's connections without touching them (closing
        would end the parent's sessions); the child opens its own on next use."""
        self._db = None
        self._checkpoints = None
        self._done_watch = None
        self._replica = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the connections (they reopen on next use)."""
        with self._lock:
            if self._checkpoints is not None:
                self._checkpoints.stop()
                self._checkpoints = None
            if self._done_watch is not None:
                self._done_watch.close()
                self._done_watch = None
            if self._replica is not None:
                self._replica.close()
                self._replica = None
            if self._db is not None:
                self._db.close()
                self._db = None

    def _open(self) -> SystemDatabase:
        return open_system_database(self.url, self.schema, self.pool_size)
