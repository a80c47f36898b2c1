"""Execution pools: where a claimed task's body runs.

- ``threads``: a thread pool in the worker process.
- ``solo``: one task at a time, inline in the claim loop.
- ``asyncio``: one event loop for async tasks (:mod:`pgtasks.worker.asyncio_pool`).
- ``prefork``: child processes (:mod:`pgtasks.worker.prefork`).

Every pool reports each finished task to ``finish(record, outcome)``; ``outcome`` None means
the task was abandoned (cancelled or taken over), an ENQUEUED outcome gives it back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError, DatabaseUnavailable
from pgtasks.engine.execution import execute_task
from pgtasks.engine.failures import encode_exception
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord

log = logging.getLogger("pgtasks.worker")

Finish = Callable[[TaskRecord, "Outcome | None"], None]
POOLS = ("prefork", "threads", "solo", "asyncio")


@dataclass(frozen=True, slots=True)
class PoolOptions:
    kind: str = "prefork"
    size: int = 1
    time_limit: float | None = None
    soft_time_limit: float | None = None
    max_tasks_per_child: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in POOLS:
            raise ConfigurationError(f"unknown pool {self.kind!r}; choose one of {', '.join(POOLS)}")
        for name in ("time_limit", "soft_time_limit"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigurationError(f"{name} must be a positive number of seconds")
        if self.max_tasks_per_child is not None and self.max_tasks_per_child < 1:
            raise ConfigurationError("max_tasks_per_child must be >= 1")


class Pool(Protocol):
    inline: bool  # True when submit() runs the task before returning (solo)
    # True once the pool holds a thread it cannot stop (the asyncio pool's blocked loop): the
    # worker then shuts down and replaces its process (run_worker).
    replace_process: bool

    def start(self) -> None: ...

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None: ...

    def terminate(self, task_id: str) -> bool:
        """Stop a running task at once (revoke with terminate=True); False if this pool cannot."""
        ...

    def alive(self) -> bool:
        """False once the pool can no longer run tasks (its monitor stopped on its own)."""
        ...

    def waiting(self) -> int:
        """How many submitted tasks wait for a free child (prefetched), not yet started."""
        ...

    def release_waiting(self) -> None:
        """Give back every task that has not started (warm shutdown): each is finished with an
        unstarted ENQUEUED outcome, so its claim's attempt is taken back."""
        ...

    def shutdown(self, wait: bool) -> None: ...


def run_guarded(
    engine: Engine, record: TaskRecord, executor_id: str, steps: list[StepRecord] | None = None
) -> Outcome | None:
    """execute_task, where an internal error still ends the task once.

    A lost database gives the task back (it runs again from its last checkpoint); any other
    error ends it ERROR with that error stored, because running the body again would repeat
    both its effects and the error. The log line names the error's type only: its text or
    traceback may quote the task's arguments, secret ones included (they are in the task's
    stored error)."""
    try:
        return execute_task(engine, record, executor_id, steps)
    except BaseException as exc:  # never let a task take the worker down
        return guarded_outcome(record, exc)


def guarded_outcome(record: TaskRecord, exc: BaseException) -> Outcome:
    """The outcome of a task whose execution failed inside pgtasks with ``exc``: given back
    when the database was lost, else ERROR with that error stored (see :func:`run_guarded`)."""
    if isinstance(exc, DatabaseUnavailable):
        log.warning("lost the database running task %s; giving it back", record.task_id)
        return Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token)
    log.error(
        "internal error running task %s[%s]: %s (stored as its error)",
        record.name,
        record.task_id,
        type(exc).__name__,
    )
    return Outcome(record.task_id, Status.ERROR, error=encode_exception(exc), claim_token=record.claim_token)


class ThreadPool:
    inline = False
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._finish = engine, executor_id, finish
        self._threads = ThreadPoolExecutor(options.size, thread_name_prefix="pgtasks-task")

    def start(self) -> None:
        pass

    def terminate(self, task_id: str) -> bool:
        return False  # a thread cannot be stopped safely: the task stops at its next step

    def alive(self) -> bool:
        return True

    def waiting(self) -> int:
        return 0  # the worker submits only what it can start at once

    def release_waiting(self) -> None:
        pass

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        self._threads.submit(
            lambda: self._finish(record, run_guarded(self._engine, record, self._executor_id, steps))
        )

    def shutdown(self, wait: bool) -> None:
        self._threads.shutdown(wait=wait)


class SoloPool(ThreadPool):
    inline = True
    replace_process = False

    def __init__(self, engine: Engine, executor_id: str, options: PoolOptions, finish: Finish) -> None:
        self._engine, self._executor_id, self._finish = engine, executor_id, finish

    def submit(self, record: TaskRecord, steps: list[StepRecord] | None = None) -> None:
        self._finish(record, run_guarded(self._engine, record, self._executor_id, steps))

    def shutdown(self, wait: bool) -> None:
        pass
