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

import sys

from pgtasks.compat.celery import states
from pgtasks.compat.celery.exceptions import NotRegistered
from pgtasks.compat.celery.utils.serialization import UnpickleableExceptionWrapper
from pgtasks.engine.errors import TaskError, TaskNotRegistered
from pgtasks.engine.failures import error_arguments, error_repr, error_type
from pgtasks.sysdb.records import Status

# Where Celery's and kombu's exception classes lived before the Celery layer took Celery's
# module paths: a failure stored by an older pgtasks names these modules.
MOVED_EXCEPTION_MODULES = {
    "pgtasks.compat.exceptions": "pgtasks.compat.celery.exceptions",
    "pgtasks.compat.kombu_utils": "pgtasks.compat.kombu.exceptions",
}


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


def celery_exception(exc: BaseException, error_text: str | None = None) -> BaseException:
    """``exc`` under Celery's class where pgtasks' engine recorded it under its own: a task a
    worker did not know (``TaskNotRegistered``) is Celery's ``NotRegistered``; an exception
    of a class this process has loaded that its stored arguments do not rebuild (``error_text``,
    the stored failure) is Celery's ``UnpickleableExceptionWrapper``."""
    if isinstance(exc, TaskNotRegistered) and not isinstance(exc, NotRegistered):
        mapped = NotRegistered(*exc.args)
        mapped.remote_traceback = getattr(exc, "remote_traceback", None)  # type: ignore[attr-defined]
        return mapped
    if isinstance(exc, TaskError):
        return _moved_class(exc) or _unrebuilt(exc, error_text) or exc
    return exc


def _unrebuilt(exc: TaskError, error_text: str | None) -> BaseException | None:
    """Celery's worker stores an exception that does not survive pickling (its ``__init__``
    refuses its own ``args``) as an ``UnpickleableExceptionWrapper`` of its module, class name,
    arguments and repr, which ``get()`` raises: the same from the stored failure, when the
    class is one this process has loaded (else the failure stays a TaskError)."""
    if not error_text:
        return None
    module, qualname = error_type(error_text)
    owner = sys.modules.get(module)
    for part in qualname.split(".") if owner is not None else ():
        owner = getattr(owner, part, None)
    if not (isinstance(owner, type) and issubclass(owner, Exception)):
        return None
    args = error_arguments(error_text)
    if not args:  # kept none (pydantic's ValidationError has no args): its message shows it
        args = [exc.message]
        text = f"{qualname.rpartition('.')[2]}({exc.message!r})"
    else:
        text = error_repr(error_text)
    wrapper = UnpickleableExceptionWrapper(module, qualname, tuple(args), text)
    wrapper.remote_traceback = exc.remote_traceback
    return wrapper


def _moved_class(exc: TaskError) -> BaseException | None:
    """A failure stored under a module path of an older pgtasks, rebuilt as its class now."""
    module, _, name = exc.type_name.rpartition(".")
    owner = sys.modules.get(MOVED_EXCEPTION_MODULES.get(module, ""))
    cls = getattr(owner, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return None
    try:
        rebuilt = cls(exc.message)
    except Exception:
        return None
    rebuilt.remote_traceback = exc.remote_traceback  # type: ignore[attr-defined]
    return rebuilt
