"""Records and parameter objects that cross the system database interface.

Every semantic method of :class:`~pgtasks.sysdb.interface.SystemDatabase` takes one of the
parameter objects below and returns records; callers never see SQL or rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Protocol


class Status(str, Enum):
    """The state of a task (a row of ``workflow_status``)."""

    ENQUEUED = "ENQUEUED"
    DELAYED = "DELAYED"
    PENDING = "PENDING"
    WAITING = "WAITING"  # a canvas task waiting for its predecessors (never claimed)
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"
    MAX_RECOVERY_ATTEMPTS_EXCEEDED = "MAX_RECOVERY_ATTEMPTS_EXCEEDED"

    def __str__(self) -> str:
        return self.value

    @property
    def is_terminal(self) -> bool:
        """True when the task will not run again unless resumed by hand."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset(
    {Status.SUCCESS, Status.ERROR, Status.CANCELLED, Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED}
)


class EndReason(str, Enum):
    """Why a task ended without an outcome of its own (``workflow_status.end_reason``).

    Written by the statements that end tasks this way; NULL (``None``) when the task's worker
    wrote its outcome, or while the task can still run. Resuming a task clears it. (A ``str``
    enum rather than ``StrEnum``: pgtasks supports Python 3.10.)
    """

    EXPIRED = "EXPIRED"  # CANCELLED: its expiry passed before it started (tasks_expire)
    CANCELLED = "CANCELLED"  # CANCELLED: cancelled by request (task_cancel)
    DEPENDENCY_FAILED = "DEPENDENCY_FAILED"  # ERROR: a chain or chord parent failed (links)
    NOT_NEEDED = "NOT_NEEDED"  # CANCELLED: an error callback whose parent succeeded (links)

    def __str__(self) -> str:
        return self.value


class NewTask(NamedTuple):
    """One task to insert. ``inputs`` is already serialized under ``serialization``.

    Immutable like the other records, but a named tuple: a bulk enqueue builds one per task,
    and a frozen dataclass of 17 fields costs ten times as much to build (one
    ``object.__setattr__`` per field); ``_replace`` makes a changed copy."""

    task_id: str
    name: str
    inputs: str
    queue_name: str
    serialization: str = "json"
    priority: int = 0
    deduplication_id: str | None = None
    partition_key: str | None = None
    delay_ms: int | None = None  # relative to the database clock
    delay_until_epoch_ms: int | None = None  # absolute; wins over delay_ms
    application_version: str | None = None
    max_recovery_attempts: int = 100
    parent_task_id: str | None = None
    expires_at_epoch_ms: int | None = None  # not started by then: cancelled, never run
    expires_in_ms: int | None = None  # relative to the database clock; the absolute value wins
    meta: str | None = None  # JSON: the Celery request extras, the producer's trace context
    retries: int = 0  # the retry count it starts with (a task moved from a Celery broker)


# duplicate_of when the task holding the deduplication id finished while we looked it up.
HOLDER_FINISHED = "(finished)"


class EnqueueResult(NamedTuple):
    """What happened to one :class:`NewTask`: inserted, its id already taken (the existing
    task is kept), or refused because another task holds its deduplication id. A named
    tuple, as :class:`NewTask`: one is built per task sent."""

    task_id: str
    inserted: bool
    # Set when a different task already holds the (queue, deduplication_id) pair; None with
    # inserted=False means the task id itself existed.
    duplicate_of: str | None = None


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """A row of ``workflow_status``. A worker's claimed record (``rows.claimed_record``) leaves
    ``output``, ``deduplication_id``, ``partition_key``, ``forked_from``, ``end_reason`` and
    ``wait_for`` None: read the row for them."""

    task_id: str
    status: Status
    name: str
    inputs: str
    serialization: str
    queue_name: str
    output: str | None = None
    error: str | None = None
    priority: int = 0
    deduplication_id: str | None = None
    partition_key: str | None = None
    delay_until_epoch_ms: int | None = None
    executor_id: str | None = None
    application_version: str | None = None
    recovery_attempts: int = 0
    max_recovery_attempts: int = 100
    created_at: int = 0
    updated_at: int = 0
    started_at_epoch_ms: int | None = None
    parent_task_id: str | None = None
    forked_from: str | None = None
    enqueue_seq: int = 0  # FIFO position within a priority
    expires_at_epoch_ms: int | None = None
    claim_token: str | None = None  # set by each claim; fences every write of that run
    has_steps: bool | None = None  # from a claim: whether any checkpoint exists (None: unknown)
    retries: int = 0  # how many times the task asked to run again (Celery's request.retries)
    has_links: bool = False  # other tasks wait for this one's outcome (task_links)
    meta: str | None = None  # JSON: metadata its sender stored with the task (headers, root_id, group)
    end_reason: EndReason | None = None  # why it ended without its own outcome
    wait_for: str | None = None  # a suspended task's wake-up besides its time (waiting.py)
    # time.monotonic() in the claiming process when its claim returned: the claim proved the
    # task runs here then, so a step starting right after needs no ownership read of its own.
    claimed_at: float | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class StepRecord:
    """A row of ``operation_outputs``: the checkpoint of one completed step."""

    task_id: str
    function_id: int
    function_name: str
    output: str | None
    error: str | None
    serialization: str = "json"
    started_at_epoch_ms: int | None = None
    completed_at_epoch_ms: int | None = None
    executor_id: str | None = None
    claim_token: str | None = None  # None: fenced on the executor only (tools and tests)


@dataclass(frozen=True, slots=True)
class TaskOwner:
    """Who must still run a task for its next step to start (the ownership read)."""

    task_id: str
    executor_id: str
    claim_token: str | None = None


@dataclass(frozen=True, slots=True)
class QueueClaim:
    """One queue to claim from, with the limits that apply to it.

    ``limit``: at most this many for this worker now (its free slots for the queue).
    ``concurrency``: at most this many PENDING across all workers (per partition key when
    ``partitioned``). ``rate_limit_max`` per ``rate_limit_period_ms``: at most that many
    started in any window of that length, across all workers.
    """

    name: str
    limit: int | None = None
    concurrency: int | None = None
    rate_limit_max: int | None = None
    rate_limit_period_ms: int | None = None
    partitioned: bool = False

    @property
    def is_limited(self) -> bool:
        """True when claiming must count other workers' tasks first."""
        return self.concurrency is not None or self.rate_limit_max is not None or self.partitioned


@dataclass(frozen=True, slots=True)
class ClaimParams:
    """Claim up to ``limit`` ENQUEUED tasks of ``queues`` for ``executor_id``.

    ``queues`` may hold plain names (no limits) or :class:`QueueClaim` objects.
    """

    executor_id: str
    application_version: str
    queues: tuple[QueueClaim | str, ...]
    limit: int
    claim_token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def claims(self) -> list[QueueClaim]:
        """Each queue as a QueueClaim, with its own limit capped by the total."""
        out = []
        for queue in self.queues:
            claim = QueueClaim(queue) if isinstance(queue, str) else queue
            limit = self.limit if claim.limit is None else min(claim.limit, self.limit)
            out.append(
                QueueClaim(
                    claim.name,
                    limit,
                    claim.concurrency,
                    claim.rate_limit_max,
                    claim.rate_limit_period_ms,
                    claim.partitioned,
                )
            )
        return out


@dataclass(frozen=True, slots=True)
class Outcome:
    """The final state of one task, written fenced on the executor that ran it."""

    task_id: str
    # SUCCESS or ERROR; ENQUEUED gives the task back unfinished (release); DELAYED: the task
    # suspended itself to wait (engine/waiting.py) and its row says so already: nothing to write;
    # CANCELLED only where a revoke resolves links (task_cancel, tasks_expire)
    status: Status
    output: str | None = None
    error: str | None = None
    claim_token: str | None = None  # the run's token; None fences on the executor only
    # A retry: run the task again from scratch after this many ms (0: at once), counting it in
    # ``retries``; ``error`` says why. Its checkpoints are dropped and its attempts reset.
    retry_in_ms: int | None = None
    has_links: bool = False  # the task's row has links: resolve them in the same transaction
    inputs: str | None = None  # a retry's new arguments (serialized like the row's), or None
    queue: str | None = None  # a retry's new queue, or None
    priority: int | None = None  # a retry's new priority, or None
    # An ENQUEUED outcome for a task that was claimed but never started (a prefetched task
    # given back at shutdown): its claim's attempt is taken back, so it is never dead-lettered.
    unstarted: bool = False


@dataclass(frozen=True, slots=True)
class CompleteParams:
    """Write many outcomes in one statement, each only if ``executor_id`` still owns it."""

    executor_id: str
    outcomes: tuple[Outcome, ...]
    links: LinkResolver | None = None  # resolves the links of outcomes with ``has_links``


class StepWrite(str, Enum):
    """The result of recording a step checkpoint."""

    RECORDED = "RECORDED"  # this call wrote the row (or an earlier try of this run did)
    # Recorded, but the task no longer runs here (cancelled meanwhile): stop before the next step.
    RECORDED_STOPPED = "RECORDED_STOPPED"
    CONFLICT = "CONFLICT"  # another executor recorded this step first
    NOT_OWNER = "NOT_OWNER"  # the task is no longer PENDING on this executor


@dataclass(frozen=True, slots=True)
class ListTasksParams:
    """Filters for listing tasks; every field is optional."""

    status: tuple[Status, ...] = ()
    name: str | None = None
    queue_name: str | None = None
    created_after_epoch_ms: int | None = None
    created_before_epoch_ms: int | None = None
    limit: int = 100
    newest_first: bool = True
    executor_id: str | None = None
    # Keyset pagination: only tasks after this (created_at, enqueue_seq) in the listing's order.
    after_key: tuple[int, int] | None = None


RECENT_ORDERS = ("updated", "name", "status", "received", "started")


@dataclass(frozen=True, slots=True)
class RecentTasksParams:
    """The ids of the recent tasks: the ``window`` newest by creation (and every PENDING one,
    however old), filtered and ordered. ``order``: ``updated`` (the last change), ``name``
    (case-folded), ``status`` (by the position of the status in ``status_order``),
    ``received`` (the claim, or the creation of a DELAYED task) or ``started``; ties by id,
    in the same direction; descending puts NULLs last, ascending first. ``name`` and
    ``executor_id`` match case-insensitively; ``received_*`` bound the received time (a task
    not received passes). ``limit`` None: every match."""

    window: int
    order: str = "updated"
    descending: bool = True
    status: tuple[Status, ...] = ()
    status_order: tuple[Status, ...] = ()
    name: str | None = None
    executor_id: str | None = None
    received_after_epoch_ms: int | None = None
    received_before_epoch_ms: int | None = None
    limit: int | None = None
    offset: int = 0


@dataclass(frozen=True, slots=True)
class WorkerCommand:
    """A request to one worker (``executor_id``): its ``command`` and JSON ``arguments``, and
    once the worker has acted, its JSON ``reply``."""

    command_id: str
    executor_id: str
    command: str
    arguments: str = "{}"
    created_at: int = 0
    reply: str | None = None


@dataclass(frozen=True, slots=True)
class ForkParams:
    """Copy task ``source_id`` to ``new_task_id``, keeping its steps before ``start_step``."""

    source_id: str
    new_task_id: str
    start_step: int
    queue_name: str | None = None


@dataclass(frozen=True, slots=True)
class ExecutorInfo:
    """A row of ``executors``: one live worker process (or producer) and its lease."""

    executor_id: str
    hostname: str
    pid: int
    application_version: str
    queues: tuple[str, ...] = ()
    started_at: int = 0
    last_heartbeat: int = 0
    lease_ms: int = 30_000
    details: str | None = None  # JSON the worker writes about itself (tasks, pool), for inspect


@dataclass(frozen=True, slots=True)
class RecoverStaleParams:
    """Re-enqueue PENDING tasks whose executor's heartbeat is older than that executor's own
    lease (or than ``lease_ms`` when given), or whose executor has no row at all. With
    ``exclude_executor_id`` (the executor recovering, whose own tasks are left alone) nothing
    is recovered unless that executor's own lease is live and no hold runs that its heartbeat
    set after a gap (see the ``executor_heartbeat`` statement)."""

    lease_ms: int | None = None
    exclude_executor_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReleaseStrayParams:
    """Give back PENDING tasks of ``executor_id`` that it is not running (a claim whose reply
    was lost): those not in ``keep`` and started more than ``older_than_ms`` ago."""

    executor_id: str
    keep: tuple[str, ...]
    older_than_ms: int


@dataclass(frozen=True, slots=True)
class RecoverOwnParams:
    """Re-enqueue the PENDING tasks of ``executor_id`` at start-up (whatever their version:
    each stays pinned to its own, so a worker of that version picks it up)."""

    executor_id: str


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """A row of ``queues``: flow control shared by every worker of the queue."""

    name: str
    concurrency: int | None = None
    worker_concurrency: int | None = None
    rate_limit_max: int | None = None
    rate_limit_period_sec: float | None = None
    priority_enabled: bool = False  # stored for DBOS compatibility; priority is always honoured
    partition_queue: bool = False
    polling_interval_sec: float = 1.0
    # Seconds its finished tasks are kept: None the app's result_expires, 0 until deleted by hand.
    result_expires_sec: float | None = None
    paused: bool = False  # changed only by queue_set_paused, never by an upsert of settings


@dataclass(frozen=True, slots=True)
class QueueUpsert:
    """Create the queue ``settings.name`` if missing; on an existing queue change only the
    columns named in ``changed`` (all of them when None).

    ``declared`` marks the app's own declaration (``app.queue(...)``, written by a starting
    worker): it changes a column an operator set only when the app's declared value of that
    column changed since its last declaration. Otherwise the write is an operator's
    (``pgtasks queue set``, the dashboard), and the columns it names stay as set."""

    settings: QueueSettings
    changed: frozenset[str] | None = None
    declared: bool = False


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Unfinished tasks of one queue by state, and since when its oldest ENQUEUED task has
    been due (epoch ms; None when none waits)."""

    name: str
    counts: Mapping[str, int]
    oldest_waiting_ms: int | None


@dataclass(frozen=True, slots=True)
class QueueActivity:
    """How many tasks of ``queue`` started in the bucket beginning at ``bucket_ms``, by state now."""

    queue: str
    bucket_ms: int
    status: str
    count: int


@dataclass(frozen=True, slots=True)
class TaskLinkInfo:
    """One edge of the canvas graph: ``child_id`` follows ``parent_id`` as ``kind`` says
    (chain, chord, group, errback, replace, or 'sent' for a task sent from another's body)."""

    parent_id: str
    child_id: str
    kind: str
    position: int
    done: bool


@dataclass(frozen=True, slots=True)
class QueueLatency:
    """Enqueue-to-start latency of ``queue`` over ``count`` recent starts (nearest-rank
    percentiles, milliseconds)."""

    queue: str
    count: int
    p50_ms: int
    p95_ms: int


@dataclass(frozen=True, slots=True)
class QueuePause:
    """Pause (``paused=True``) or resume the queue ``name``; its row is created if missing."""

    name: str
    paused: bool


@dataclass(frozen=True, slots=True)
class MigrationInfo:
    """One applied migration."""

    version: int
    name: str


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """How many tasks a recovery pass re-enqueued and how many it dead-lettered."""

    requeued: list[str] = field(default_factory=list)
    dead_lettered: list[str] = field(default_factory=list)


class LinkKind(str, Enum):
    """What a link from a parent to a child means (see ``task_links``)."""

    CHAIN = "chain"  # the child runs after the parent succeeded, with its result first
    CHORD = "chord"  # the child runs after every chord parent succeeded, with their results
    ERRBACK = "errback"  # the child runs after the parent failed, with the parent's id first
    # As ``errback``, only for a parent that failed without running (a chord body whose
    # header failed): the child calls an errback its worker would have called.
    ERRBACK_UNRUN = "errback_unrun"
    GROUP = "group"  # membership of a saved group (the parent is the group id, not a task)
    # The child is a task replaced by the parent's workflow (Celery's Task.replace): it ends
    # with the parent's outcome, and then its own links resolve.
    REPLACE = "replace"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class TaskLink:
    """One row of ``task_links``. ``position`` orders a chord's results and a group's members;
    ``prepend`` False is an immutable signature: the child's arguments are kept as they are."""

    parent_id: str
    child_id: str
    kind: LinkKind
    position: int = 0
    prepend: bool = True


@dataclass(frozen=True, slots=True)
class CanvasEnqueue:
    """Insert a canvas in one transaction: ``tasks`` (those in ``waiting`` wait, WAITING, for
    their links) and the ``links`` between them."""

    tasks: tuple[NewTask, ...]
    waiting: frozenset[str] = frozenset()
    links: tuple[TaskLink, ...] = ()
    # (task id, executor id, claim token) of a running task that this canvas replaces: in the
    # same transaction it stops running (WAITING), fenced on its executor, or nothing is inserted.
    replacing: tuple[str, str, str | None] | None = None
    # (header task id, task id) for add_to_chord: the task joins every chord the running header
    # task counts towards, as one more header task (NotInChord if there is none).
    joining: tuple[str, str] | None = None
    # Resolves the links of a parent that had finished before this insert (a task id sent
    # again, or revoked before it was sent): its outcome reaches the new children at once.
    resolver: LinkResolver | None = None


@dataclass(frozen=True, slots=True)
class StoredOutcome:
    """A task's state written by hand (Celery's result backend: ``store_result``). ``task`` is
    inserted WAITING (never claimed) when no task has its id. A final ``status`` (SUCCESS,
    ERROR, CANCELLED) ends the task whatever its state was, and SUCCESS or ERROR resolve its
    links with ``links`` in the same transaction; WAITING only makes sure the row exists."""

    task: NewTask
    status: Status
    output: str | None = None
    error: str | None = None
    links: LinkResolver | None = None


@dataclass(frozen=True, slots=True)
class ChordHeaderClose:
    """The header of a chord sent task by task (a generator) is complete: drop the ``open``
    link ``group_id`` holds on each of ``bodies``, and start each body whose header tasks all
    succeeded already (in the same transaction)."""

    group_id: str
    bodies: tuple[str, ...]
    links: LinkResolver


class LinkResolver(Protocol):
    """What the system database needs from the engine to resolve links: new arguments for a
    child, and the error of a child that will not run. Values stay serialized: (tag, text)."""

    def with_result(self, child: tuple[str, str], result: tuple[str, str | None]) -> tuple[str, str]:
        """The child's inputs with the parent's result as first argument."""
        ...

    def with_results(self, child: tuple[str, str], results: list[tuple[str, str | None]]) -> tuple[str, str]:
        """The child's inputs with the list of the chord parents' results as first argument."""
        ...

    def with_task_id(self, child: tuple[str, str], task_id: str) -> tuple[str, str]:
        """The child's inputs with the failed parent's id as first argument (an errback)."""
        ...

    def dependency_error(self, parent_id: str, parent_error: str | None, kind: LinkKind) -> str:
        """The error stored on a child that will never run because ``parent_id`` failed."""
        ...

    def failure(self, exc: BaseException) -> str:
        """The error stored on a child whose arguments could not be built (``exc``)."""
        ...

    def revoked_error(self, expired: bool) -> str:
        """The error of a task revoked (or ``expired``) before it ran, as a chord waiting on
        it names it."""
        ...

    def as_output(self, result: tuple[str, str | None], tag: str) -> str | None:
        """A parent's result re-serialized with ``tag``: the output of a task it replaced."""
        ...


@dataclass(frozen=True, slots=True)
class WaitParams:
    """One look of a running task at what it waits for (docs/waiting.md), in one transaction:
    a message of ``topic`` sent to it, or the event ``event_key`` of ``event_task_id``, or,
    with neither, only its time. Found: ``step`` is recorded with it (a message is consumed
    with that checkpoint). Not found and ``deadline_ms`` (database time) passed: ``step`` is
    recorded empty. Else, more than ``hold_ms`` to wait: the task is suspended (DELAYED until
    the deadline, woken early by what it waits for) and gives its worker slot back; less: the
    caller waits and looks again. ``step`` None (a sleep: its step is its deadline) records
    nothing."""

    task_id: str
    executor_id: str
    claim_token: str | None
    deadline_ms: int
    hold_ms: int
    step: StepRecord | None = None
    topic: str | None = None
    event_task_id: str | None = None
    event_key: str | None = None

    @property
    def wait_for(self) -> str | None:
        """What besides the time wakes the suspended task (``workflow_status.wait_for``)."""
        if self.topic is not None:
            return f"message:{self.task_id}:{self.topic}"
        if self.event_task_id is not None:
            return event_wait_key(self.event_task_id, self.event_key or "")
        return None


def event_wait_key(task_id: str, key: str) -> str:
    """``wait_for`` of a task waiting for the event ``key`` of ``task_id``."""
    return f"event:{task_id}:{key}"


class WaitState(str, Enum):
    """How one look of :class:`WaitParams` ended."""

    DONE = "DONE"  # found (or timed out): the step is recorded
    SUSPENDED = "SUSPENDED"  # the task now waits as DELAYED: its body must stop
    WAIT = "WAIT"  # nothing yet, and too little time left to give the slot back: look again
    ABANDONED = "ABANDONED"  # the task is no longer this run's (cancelled, or taken over)


@dataclass(frozen=True, slots=True)
class Deadline:
    """A wait's recorded deadline (epoch ms, database time) and what became of the task:
    WAIT (it goes on), SUSPENDED (it waits as DELAYED until then) or ABANDONED (the step was
    not this run's to record)."""

    wake_at_ms: int
    state: WaitState


@dataclass(frozen=True, slots=True)
class WaitResult:
    """What a wait found: ``output`` (serialized by ``serialization``; None when it timed
    out), and for WAIT the milliseconds left until the deadline."""

    state: WaitState
    output: str | None = None
    serialization: str = "json"
    remaining_ms: int = 0


@dataclass(frozen=True, slots=True)
class MessageParams:
    """A message to ``destination`` under ``topic``; ``message_id`` makes a re-send of the
    same message a no-op (built from the sender's idempotency key)."""

    message_id: str
    destination: str
    topic: str
    message: str
    serialization: str = "json"


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """A message of a task, as the dashboard shows it."""

    message_id: str
    topic: str
    message: str
    serialization: str
    created_at_epoch_ms: int
    consumed: bool


@dataclass(frozen=True, slots=True)
class EventEntry:
    """One value a task set under ``key``, by the step ``function_id`` (its history)."""

    key: str
    value: str
    serialization: str
    function_id: int


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """One value of a stream at ``position``; ``value`` None closes the stream."""

    position: int
    value: str | None
    serialization: str
