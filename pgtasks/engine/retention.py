"""Retention: finished tasks are deleted once they are older than their queue's
``result_expires`` (the app's ``result_expires`` unless the queue sets its own), in batches
of :data:`PRUNE_BATCH` so that no statement holds many row locks for long."""

from __future__ import annotations

from collections import Counter

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.queues import MAX_SECONDS

PRUNE_BATCH = 1000


def older_than_ms(result_expires: float | None, older_than: float | None) -> int | None:
    """The age (ms) past which finished tasks go: ``older_than`` seconds, else the app's
    ``result_expires``; None when results are kept forever."""
    seconds = result_expires if older_than is None else older_than
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_SECONDS:
        raise ConfigurationError(
            f"the age of tasks to prune must be a number of seconds from 0 to a century, not {seconds!r}"
        )
    return round(seconds * 1000)


def prune(
    sysdb: SystemDatabase,
    result_expires: float | None,
    older_than: float | None = None,
    queue: str | None = None,
    batch: int = PRUNE_BATCH,
    max_batches: int | None = None,
) -> dict[str, int]:
    """Delete finished tasks older than ``older_than`` seconds, in every queue; by default
    those past their queue's age (its own ``result_expires``, else the app's
    ``result_expires``). Batch after batch until none is left (or ``max_batches``); return
    the counts per queue. Unfinished tasks, dead letters and tasks a waiting canvas needs
    are never deleted."""
    age = older_than_ms(result_expires, older_than)
    if batch < 1:
        raise ConfigurationError(f"batch must be >= 1, not {batch!r}")
    total: Counter[str] = Counter()
    done = 0
    while max_batches is None or done < max_batches:
        deleted = sysdb.tasks_prune(age, batch, queue, per_queue=older_than is None)
        total.update(deleted)
        done += 1
        if sum(deleted.values()) < batch:
            break
    return dict(total)


def prunable(
    sysdb: SystemDatabase,
    result_expires: float | None,
    older_than: float | None = None,
    queue: str | None = None,
) -> dict[str, int]:
    """What :func:`prune` would delete now, per queue."""
    age = older_than_ms(result_expires, older_than)
    return sysdb.tasks_prunable(age, queue, per_queue=older_than is None)
