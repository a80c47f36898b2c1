"""What a worker process asks of the engine: its executor row and lease, claims, recorded
steps, batched outcomes, recovery, the promotion and expiry of waiting tasks, its queues'
settings and the enqueue listener. The worker speaks to this, never to the system database."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pgtasks.engine import retention
from pgtasks.engine.connection import DatabaseHandle
from pgtasks.sysdb.commands import command_announcement
from pgtasks.sysdb.interface import EnqueueListener
from pgtasks.sysdb.records import (
    ClaimParams,
    CompleteParams,
    ExecutorInfo,
    LinkResolver,
    QueueSettings,
    QueueUpsert,
    RecoverOwnParams,
    RecoverStaleParams,
    RecoveryReport,
    ReleaseStrayParams,
    StepRecord,
    TaskRecord,
    WorkerCommand,
)

__all__ = ["EnqueueListener", "WorkerApi"]

log = logging.getLogger("pgtasks.worker")


class WorkerApi:
    """The engine's operations for one worker process (``engine.worker_api``), over the
    engine's ``database`` handle; ``result_expires`` is the app's age of finished tasks (what
    :meth:`prune` deletes by default). Every call reaches the handle's current connection, so
    a forked child that dropped its parent's connections opens its own on the next call."""

    def __init__(self, database: DatabaseHandle, result_expires: float | None, links: LinkResolver) -> None:
        self._database = database
        self._result_expires = result_expires
        self._links = links
        # Told the ids of the tasks this process ended as expired, once committed (a Celery
        # app's worker sends task_revoked from it); an exception is logged, never raised.
        self.on_expired: Callable[[list[str]], None] | None = None

    # -- the executor --------------------------------------------------------------------
    def now_ms(self) -> int:
        """The database server's clock, in epoch milliseconds."""
        return self._database.sysdb.now_ms()

    def register_version(self, version: str) -> None:
        """Record the application version this worker runs."""
        self._database.sysdb.version_register(version)

    def register_executor(self, info: ExecutorInfo) -> None:
        """Insert (or take over) this worker's executor row, with a fresh heartbeat."""
        self._database.sysdb.executor_register(info)

    def heartbeat(self, executor_id: str) -> bool:
        """Renew the lease; False if the row is gone (another worker recovered our tasks)."""
        return self._database.sysdb.executor_heartbeat(executor_id)

    def report(self, executor_id: str, details: str) -> bool:
        """Publish what this worker says about itself (JSON); False if its row is gone."""
        return self._database.sysdb.executor_report(executor_id, details)

    def pending_commands(self, executor_id: str, max_age_ms: int) -> list[WorkerCommand]:
        """The commands sent to this worker in the last ``max_age_ms`` it has not answered."""
        return self._database.sysdb.worker_commands_pending(executor_id, max_age_ms)

    def reply_command(self, command_id: str, reply: str) -> None:
        """Answer a command (JSON ``reply``)."""
        self._database.sysdb.worker_command_reply(command_id, reply)

    @staticmethod
    def command_announcement(executor_id: str) -> str:
        """The notification a listener hears when a command is sent to ``executor_id``."""
        return command_announcement(executor_id)

    def clear_commands(self, executor_id: str) -> None:
        """Forget the commands sent to an earlier worker of this name (and every old one)."""
        self._database.sysdb.worker_commands_clear(executor_id)

    def limit_outage_wait(self, seconds: float) -> None:
        """Wait out an unreachable database for at most ``seconds`` from now on (shutdown)."""
        self._database.sysdb.limit_outage_wait(seconds)

    def unregister_executor(self, executor_id: str) -> None:
        """Remove this worker's executor row (after a clean shutdown)."""
        self._database.sysdb.executor_unregister(executor_id)

    def prune(self, max_batches: int) -> dict[str, int]:
        """Delete finished tasks past ``result_expires`` (at most ``max_batches`` batches)."""
        return retention.prune(self._database.sysdb, self._result_expires, max_batches=max_batches)

    def executors(self) -> list[ExecutorInfo]:
        """Every registered executor, live or not."""
        return self._database.sysdb.executors_list()

    # -- recovery and housekeeping -------------------------------------------------------
    def recover_own(self, executor_id: str) -> RecoveryReport:
        """Re-enqueue (or dead-letter) the PENDING tasks a previous run of this executor held."""
        return self._database.sysdb.tasks_recover_own(RecoverOwnParams(executor_id))

    def recover_stale(self, params: RecoverStaleParams) -> RecoveryReport:
        """Re-enqueue the PENDING tasks of executors whose lease expired."""
        return self._database.sysdb.tasks_recover_stale(params)

    def release_stray(self, params: ReleaseStrayParams) -> list[str]:
        """Give back PENDING tasks of this executor that it does not know it holds."""
        return self._database.sysdb.tasks_release_stray(params)

    def owns(self, task_id: str, executor_id: str, claim_token: str | None) -> bool:
        """Whether ``executor_id`` still holds the task under ``claim_token`` (PENDING on it):
        False once it was revoked, or recovered and claimed by another executor."""
        return self._database.sysdb.task_owned_by(task_id, executor_id, claim_token)

    def to_terminate(self, task_ids: list[str]) -> list[str]:
        """Those of ``task_ids`` revoked with terminate=True."""
        return self._database.sysdb.tasks_to_terminate(task_ids)

    def promote_delayed(self) -> int:
        """Move DELAYED tasks that are due to ENQUEUED; return how many."""
        return self._database.sysdb.tasks_promote_delayed()

    def promote_due(self, queues: tuple[str, ...]) -> tuple[int, int | None]:
        """Promote the due DELAYED tasks; then the ms until the next one of ``queues`` is due."""
        return self._database.sysdb.tasks_promote_due(queues)

    def announce(self, queues: tuple[str, ...]) -> None:
        """Wake the workers of ``queues`` (a freed slot under a global limit)."""
        self._database.sysdb.queues_announce(queues)

    def expire_claimed(self, record: TaskRecord, executor_id: str) -> bool:
        """End ``record`` (claimed by this executor, not started) if its expiry has passed:
        Celery checks ``expires`` when a prefetched task is about to run. True if it ended."""
        if record.expires_at_epoch_ms is None:
            return False
        ended = self._database.sysdb.task_expire_claimed(
            record.task_id, executor_id, record.claim_token, self._links
        )
        if ended:
            self._tell_expired([record.task_id])
        return ended

    def expire(self) -> list[str]:
        """Cancel waiting tasks whose expiry passed; return their ids (what waits on them is
        resolved as for a revoke)."""
        expired = self._database.sysdb.tasks_expire(self._links)
        self._tell_expired(expired)
        return expired

    def _tell_expired(self, task_ids: list[str]) -> None:
        hook = self.on_expired
        if hook is None or not task_ids:
            return
        try:
            hook(task_ids)
        except Exception:
            log.exception("the expired hook failed for tasks %s", ", ".join(task_ids[:10]))

    # -- claims and outcomes -------------------------------------------------------------
    def claim(self, params: ClaimParams) -> list[TaskRecord]:
        """Claim up to the free slots of ``params`` in one statement."""
        return self._database.sysdb.tasks_claim(params)

    def recorded_steps(self, task_ids: list[str]) -> dict[str, list[StepRecord]]:
        """The checkpoints of several tasks, in one query."""
        return self._database.sysdb.steps_get_many(task_ids)

    def complete(self, params: CompleteParams) -> list[str]:
        """Write a batch of outcomes (fenced on the executor); return the ids written."""
        return self._database.sysdb.tasks_complete(params)

    def complete_and_claim(
        self, complete: CompleteParams, claim: ClaimParams
    ) -> tuple[list[str], list[TaskRecord]]:
        """Write a batch of outcomes and claim the next tasks, in one round trip where the
        database can (see ``tasks_complete_claim``): the ids written and the tasks claimed."""
        return self._database.sysdb.tasks_complete_claim(complete, claim)

    def task(self, task_id: str) -> TaskRecord | None:
        """One task's row, or None."""
        return self._database.sysdb.task_get(task_id)

    # -- queues and wake-ups -------------------------------------------------------------
    def queues(self, names: tuple[str, ...]) -> list[QueueSettings]:
        """The stored settings of ``names`` (those that have a row)."""
        return self._database.sysdb.queues_get(names)

    def upsert_queue(self, params: QueueUpsert) -> QueueSettings:
        """Create or update one queue's settings."""
        return self._database.sysdb.queue_upsert(params)

    def open_listener(self) -> EnqueueListener | None:
        """A listener for enqueue announcements, or None where the dialect has none."""
        return self._database.sysdb.open_listener()
