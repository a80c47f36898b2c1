"""pgtasks' task rows read in Celery's terms: a task's status as Celery's state, and its
recorded exception under Celery's class.

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

from pgtasks.compat.celery import states
from pgtasks.compat.celery.exceptions import NotRegistered
from pgtasks.engine.errors import TaskNotRegistered
from pgtasks.sysdb.records import Status


def celery_state(status: Status | None, retries: int = 0, track_started: bool = False) -> str:
    """The Celery state of a task in pgtasks ``status`` (None: no such task, which Celery
    also reports as PENDING)."""
    if status is None:
        return states.PENDING
    if status is Status.SUCCESS:
        return states.SUCCESS
    if status in (Status.ERROR, Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED):
        return states.FAILURE
    if status is Status.CANCELLED:
        return states.REVOKED
    if status is Status.PENDING and track_started:
        return states.STARTED
    return states.RETRY if retries > 0 else states.PENDING


def celery_exception(exc: BaseException) -> BaseException:
    """``exc`` under Celery's class where pgtasks' engine recorded it under its own: a task a
    worker did not know (``TaskNotRegistered``) is Celery's ``NotRegistered``."""
    if isinstance(exc, TaskNotRegistered) and not isinstance(exc, NotRegistered):
        mapped = NotRegistered(*exc.args)
        mapped.remote_traceback = getattr(exc, "remote_traceback", None)  # type: ignore[attr-defined]
        return mapped
    return exc
