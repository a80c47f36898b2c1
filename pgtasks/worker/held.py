"""Tasks claimed ahead of a free thread, coroutine or child (the pools' claim-ahead, see
``Worker._free_slots``): what a held task is (threads and asyncio), the check before one that
waited long starts (every pool, prefork in its child), which held tasks go back when the
worker holds too many (:func:`take_stale_tail`), and the outcome that gives one back
unstarted.

A held task is PENDING on this executor but not started. One that waited longer than
HELD_CHECK_SECONDS is checked before it starts: revoked or taken over meanwhile (no longer
this run's), it is not run; past its expiry, it is ended as expired and not run.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, TypeVar

from pgtasks.engine.core import Engine
from pgtasks.engine.errors import DatabaseUnavailable
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord

HELD_CHECK_SECONDS = 0.5


class Waiting(Protocol):
    """A task a pool holds, not started."""

    @property
    def record(self) -> TaskRecord: ...

    @property
    def since(self) -> float: ...  # time.monotonic() when the pool took it

    @property
    def ahead(self) -> bool: ...  # claimed beyond the free slots (see Held.ahead)


W = TypeVar("W", bound=Waiting)


class Held(NamedTuple):
    """A claimed task waiting for a free thread or coroutine of the pool."""

    record: TaskRecord
    steps: list[StepRecord] | None
    since: float  # time.monotonic() when the pool took it
    # False for a task the pool had a free slot for when it took it: it starts as soon as the
    # pool gets to it (an event loop busy with others may take a while), and is never checked.
    ahead: bool = True


def waited_long(held: Held) -> bool:
    """Whether ``held`` was claimed ahead and waited long enough to be checked before it starts."""
    return held.ahead and time.monotonic() - held.since > HELD_CHECK_SECONDS


def take_stale_tail(held: collections.deque[W], most: int, waited: float) -> list[W]:
    """Remove and return up to ``most`` tasks from the end of ``held`` (the last claimed), in
    their order, each claimed ahead and held at least ``waited`` seconds: it stops at the first
    younger one. The rest keep their order. The caller holds the pool's lock, which a task
    taken to start needs too: a task is either started or taken here, never both."""
    oldest = time.monotonic() - waited
    taken: list[W] = []
    while held and len(taken) < most and held[-1].ahead and held[-1].since <= oldest:
        taken.append(held.pop())
    taken.reverse()
    return taken


def give_back_stale(
    lock: AbstractContextManager[Any],
    held: collections.deque[W],
    most: int,
    waited: float,
    finish: Callable[[TaskRecord, Outcome | None], None],
) -> int:
    """A pool's ``give_back``: take the stale tail of ``held`` under the pool's ``lock`` (see
    :func:`take_stale_tail`), then finish each with the unstarted outcome; how many."""
    with lock:
        given = take_stale_tail(held, most, waited)
    for task in given:
        finish(task.record, unstarted(task.record))
    return len(given)


def checked_to_run(engine: Engine, record: TaskRecord, executor_id: str) -> TaskRecord | None:
    """``record`` (claimed, and waited long: held by the threads or asyncio pool, or by a
    prefork parent or child) if it may start: still this run's, and not past its expiry (then
    ended as expired); None if not. Confirmed, it comes back as confirmed now, so its first
    step reads its ownership no sooner than after a fresh claim (steps.OWNERSHIP_FRESH_SECONDS).
    A database error counts as yes, unconfirmed: the fence on its checkpoints and outcome
    still holds."""
    api = engine.worker_api
    try:
        if not api.owns(record.task_id, executor_id, record.claim_token):
            return None
        if record.expires_at_epoch_ms is not None and api.expire_claimed(record, executor_id):
            return None
    except DatabaseUnavailable:
        return record
    return dataclasses.replace(record, claimed_at=time.monotonic())


def unstarted(record: TaskRecord) -> Outcome:
    """Gives a held task back: ENQUEUED, its claim's attempt taken back."""
    return Outcome(record.task_id, Status.ENQUEUED, claim_token=record.claim_token, unstarted=True)
