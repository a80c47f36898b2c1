"""``celery.states``: Celery's task state names and sets, and how pgtasks' statuses map to them.

=========================  ==================================================================
pgtasks status             Celery state
=========================  ==================================================================
ENQUEUED, DELAYED          PENDING (RETRY once the task has asked to be retried)
PENDING (running)          STARTED when the task tracks it (``track_started``), else as above
SUCCESS                    SUCCESS
ERROR                      FAILURE
CANCELLED                  REVOKED
MAX_RECOVERY_ATTEMPTS...   FAILURE (the task killed its worker too many times)
=========================  ==================================================================
"""

from __future__ import annotations

from pgtasks.sysdb.records import Status

PENDING = "PENDING"
RECEIVED = "RECEIVED"
STARTED = "STARTED"
SUCCESS = "SUCCESS"
FAILURE = "FAILURE"
REVOKED = "REVOKED"
REJECTED = "REJECTED"
RETRY = "RETRY"
IGNORED = "IGNORED"

READY_STATES = frozenset({SUCCESS, FAILURE, REVOKED})
UNREADY_STATES = frozenset({PENDING, RECEIVED, STARTED, REJECTED, RETRY})
EXCEPTION_STATES = frozenset({RETRY, FAILURE, REVOKED})
PROPAGATE_STATES = frozenset({FAILURE, REVOKED})
ALL_STATES = frozenset({PENDING, RECEIVED, STARTED, SUCCESS, FAILURE, RETRY, REVOKED})

# Highest first; an unknown (custom) state ranks where None is.
PRECEDENCE = [SUCCESS, FAILURE, None, REVOKED, STARTED, RECEIVED, REJECTED, RETRY, PENDING]
_PRECEDENCE_INDEX = {name: index for index, name in enumerate(PRECEDENCE)}
NONE_PRECEDENCE = _PRECEDENCE_INDEX[None]


def precedence(state: str | None) -> int:
    """The position of ``state`` in :data:`PRECEDENCE` (lower wins)."""
    return _PRECEDENCE_INDEX.get(state, NONE_PRECEDENCE)


class state(str):
    """A state name that compares by precedence: ``state(SUCCESS) > state(PENDING)``."""

    def __gt__(self, other: object) -> bool:
        return precedence(self) < precedence(str(other))

    def __ge__(self, other: object) -> bool:
        return precedence(self) <= precedence(str(other))

    def __lt__(self, other: object) -> bool:
        return precedence(self) > precedence(str(other))

    def __le__(self, other: object) -> bool:
        return precedence(self) >= precedence(str(other))

    __hash__ = str.__hash__


def celery_state(status: Status | None, retries: int = 0, track_started: bool = False) -> str:
    """The Celery state of a task in pgtasks ``status`` (None: no such task, which Celery
    also reports as PENDING)."""
    if status is None:
        return PENDING
    if status is Status.SUCCESS:
        return SUCCESS
    if status in (Status.ERROR, Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED):
        return FAILURE
    if status is Status.CANCELLED:
        return REVOKED
    if status is Status.PENDING and track_started:
        return STARTED
    return RETRY if retries > 0 else PENDING
