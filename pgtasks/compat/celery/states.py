"""Celery's ``celery.states``: the task state names, their sets and their precedence. How
pgtasks' task statuses read as these states is bridge/outcomes.py's."""

from __future__ import annotations

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
