"""Batched completion: outcomes of many tasks written by one UPDATE in one commit.

The claim loop carries most of them: before it claims from queues without limits it takes
the outcomes gathered so far (:meth:`BatchCompleter.take`) and sends them with its claim in
one statement (``tasks_complete_claim``); the writer thread here writes what it does not
carry (outcomes with links, those of a worker that is not claiming) after a short wait.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from pgtasks.engine.crashpoints import crashpoint
from pgtasks.engine.errors import DatabaseUnavailable, SerializationError
from pgtasks.engine.failures import describe_failure, encode_exception
from pgtasks.engine.worker_api import WorkerApi
from pgtasks.support.backoff import Backoff
from pgtasks.sysdb.records import CompleteParams, LinkResolver, Outcome, Status

log = logging.getLogger("pgtasks.worker")

FLUSH_INTERVAL = 0.002  # seconds an outcome may wait for others to share its commit
CARRY_WAIT = 0.1  # seconds the writer leaves outcomes to a claim that carries them
# While the worker drains a backlog without carrying outcomes (prefork, solo), they gather this
# long: one statement for a few dozen instead of a handful (its commit costs the same).
BACKLOG_FLUSH_INTERVAL = 0.01
MAX_BATCH = 500
RETRY_BACKOFF = Backoff(first=0.05, cap=2.0)  # between attempts to write a batch


class BatchCompleter:
    """Collects outcomes from executing threads and writes them in batches.

    A thread that ends a task hands its outcome over and goes on; the writer thread commits
    whatever has gathered, waiting at most ``FLUSH_INTERVAL`` for company. A failed write is
    retried until it succeeds (the fence makes a retry after an ambiguous commit harmless);
    only at shutdown, after the drain timeout, are unwritten outcomes left to recovery,
    which re-runs those tasks.
    """

    def __init__(
        self,
        store: WorkerApi,
        executor_id: str,
        on_done: Callable[[list[str]], None] | None = None,
        links: LinkResolver | None = None,
    ) -> None:
        self._store = store
        self._links = links
        self._executor_id = executor_id
        self._on_done = on_done
        # Whether the claim loop is about to carry pending outcomes: the writer then leaves
        # them to it for up to CARRY_WAIT before writing them itself.
        self._carried: Callable[[], bool] = lambda: False
        self._backlog: Callable[[], bool] = lambda: False  # see BACKLOG_FLUSH_INTERVAL
        self._pending: list[Outcome] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._give_up = threading.Event()
        self._inflight = 0
        self._thread = threading.Thread(target=self._run, name="pgtasks-completer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, outcome: Outcome) -> None:
        with self._cond:
            self._pending.append(outcome)
            self._cond.notify_all()

    def carried_by(self, carried: Callable[[], bool]) -> None:
        """Tell the writer when the claim loop carries outcomes (see the module's docstring)."""
        self._carried = carried

    def gathers_while(self, backlog: Callable[[], bool]) -> None:
        """Tell the writer when outcomes may gather longer (see BACKLOG_FLUSH_INTERVAL)."""
        self._backlog = backlog

    def take(self) -> list[Outcome]:
        """Up to MAX_BATCH pending outcomes without links, for the claim loop to write with its
        claim; it reports back with :meth:`written` or :meth:`give_back`."""
        with self._cond:
            if not self._pending:
                return []
            batch = [o for o in self._pending if not o.has_links][:MAX_BATCH]
            if batch:
                taken = {id(o) for o in batch}
                self._pending = [o for o in self._pending if id(o) not in taken]
                self._inflight += len(batch)
                self._cond.notify_all()  # what is left (outcomes with links) is the writer's now
        try:
            for outcome in batch:
                crashpoint("before_outcome", task_id=outcome.task_id)
        except BaseException:
            self.give_back(batch)
            raise
        return batch

    def give_back(self, batch: list[Outcome]) -> None:
        """Taken outcomes the claim could not write: the writer writes them (first)."""
        with self._cond:
            self._pending[:0] = batch
            self._inflight -= len(batch)
            self._cond.notify_all()

    def written(self, batch: list[Outcome], written: list[str]) -> None:
        """Taken outcomes the claim wrote (``written``: the ids the fence let through)."""
        try:
            self._check_written(batch, set(written))
        except Exception:  # as in the writer thread: the claim that carried them goes on
            log.exception("could not check %d written outcomes", len(batch))
        finally:
            self._done(batch)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if not self._pending and self._stopping:
                    return
            time.sleep(BACKLOG_FLUSH_INTERVAL if self._backlog() else FLUSH_INTERVAL)
            if self._carried():
                with self._cond:  # a claim takes them meanwhile, or they are written below
                    self._cond.wait_for(self._left_to_me, CARRY_WAIT)
            with self._cond:
                batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
                self._inflight += len(batch)
            if not batch:
                continue
            try:
                self._write(batch)
            except Exception:  # never let the writer thread die: later outcomes must still go out
                log.exception("could not write %d outcomes (recovery will re-run them)", len(batch))
            finally:
                self._done(batch)

    def _left_to_me(self) -> bool:
        """Whether the writer writes what is pending now (the lock held): nothing a claim would
        carry, or no claim carrying any more."""
        return self._stopping or not _carriable(self._pending) or not self._carried()

    def _done(self, batch: list[Outcome]) -> None:
        try:
            if self._on_done is not None:
                self._on_done([o.task_id for o in batch])
        finally:
            with self._cond:
                self._inflight -= len(batch)
                self._cond.notify_all()

    def _write(self, batch: list[Outcome]) -> None:
        for outcome in batch:
            crashpoint("before_outcome", task_id=outcome.task_id)
        retry = RETRY_BACKOFF.retrying()
        params = CompleteParams(self._executor_id, tuple(batch), self._links)
        while True:
            try:
                written = set(self._store.complete(params))
                break
            except Exception as exc:
                if not isinstance(exc, DatabaseUnavailable):  # refused, not lost: retrying repeats it
                    alone = self._write_refused(batch)
                    if alone is not None:
                        written = alone
                        break
                if self._give_up.is_set():
                    log.error("could not write %d outcomes (recovery will re-run them): %s", len(batch), exc)
                    return
                pause = retry.next_delay()
                assert pause is not None  # no deadline: until the write succeeds or stop() gives up
                level = logging.WARNING if retry.failures == 1 else logging.DEBUG  # once per outage
                log.log(level, "writing %d outcomes failed, retrying in %.2fs: %s", len(batch), pause, exc)
                self._give_up.wait(pause)
        self._check_written(batch, written)

    def _check_written(self, batch: list[Outcome], written: set[str]) -> None:
        for outcome in batch:
            crashpoint("after_outcome_commit", task_id=outcome.task_id)
        lost = [o for o in batch if o.task_id not in written]
        if lost:  # an attempt whose COMMIT reply was lost (retried here or below) wrote them
            lost = [o for o in lost if not self._already_written(o)]
        if lost:
            log.warning("%d outcomes were not written: those tasks were cancelled or taken over", len(lost))

    def _write_refused(self, batch: list[Outcome]) -> set[str] | None:
        """The database refused the batch (an error that is not a lost connection): write the
        outcomes one by one, and replace one it still refuses by an ERROR saying so, so that
        the task ends once instead of being retried forever and run again after a restart.
        None if the database was lost meanwhile: the caller retries the batch as usual."""
        written: set[str] = set()
        for outcome in batch:
            try:
                written.update(self._complete_one(outcome))
            except DatabaseUnavailable:
                return None
            except Exception as refused:
                log.error(
                    "the database refused the outcome of task %s: %s", outcome.task_id, type(refused).__name__
                )
                try:
                    written.update(self._complete_one(_unstorable(outcome, refused)))
                except DatabaseUnavailable:
                    return None
                except Exception as again:  # left PENDING: recovery takes it after a restart
                    log.error(
                        "could not write any outcome of task %s: %s", outcome.task_id, type(again).__name__
                    )
        return written

    def _complete_one(self, outcome: Outcome) -> list[str]:
        return self._store.complete(CompleteParams(self._executor_id, (outcome,), self._links))

    def _already_written(self, outcome: Outcome) -> bool:
        """True when the row holds this very outcome: status, executor and claim token."""
        try:
            row = self._store.task(outcome.task_id)
        except Exception:
            return False
        return (
            row is not None
            and row.status == outcome.status
            and row.executor_id == self._executor_id
            and row.claim_token == outcome.claim_token
        )

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every submitted outcome is written; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending or self._inflight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def stop(self, timeout: float | None = None) -> None:
        """Write what is pending (for up to ``timeout`` seconds), then end the writer."""
        if not self.drain(timeout):
            self._give_up.set()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)


def _carriable(pending: list[Outcome]) -> bool:
    """Whether a claim may carry any of these outcomes (those with links are written here)."""
    return any(not o.has_links for o in pending)


def _unstorable(outcome: Outcome, exc: Exception) -> Outcome:
    """An ERROR outcome in place of one the database refused to store."""
    reason = SerializationError(
        f"the outcome of task {outcome.task_id} ({outcome.status.value}) could not be stored: "
        f"{describe_failure(exc)}"
    )
    return Outcome(
        outcome.task_id, Status.ERROR, error=encode_exception(reason), claim_token=outcome.claim_token
    )
