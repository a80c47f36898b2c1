"""The ``billiard`` names that Celery integrations import (billiard is Celery's fork of
multiprocessing): served by ``install()`` only where the real billiard is not installed.

sentry-sdk's Celery integration wraps ``billiard.pool.Worker.workloop`` to flush its events
when a pool child exits, and opentelemetry's reads ``billiard.einfo``. pgtasks' prefork pool
has no billiard worker loop: an error tracker flushes at interpreter exit instead.
"""

from __future__ import annotations

import types
from typing import Any

from pgtasks.compat.execution import ExceptionInfo

VERSION = (4, 2, 1, 0)
__version__ = "4.2.1.0"


class ExceptionWithTraceback:
    """billiard's exception carrier between processes: the exception and its formatted
    traceback."""

    def __init__(self, exc: BaseException, tb: str) -> None:
        self.exc = exc
        self.tb = tb


class Worker:
    """billiard's pool worker: pgtasks' prefork children do not run it."""

    def workloop(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("pgtasks' prefork pool does not run billiard's worker loop")


def submodules() -> dict[str, types.ModuleType]:
    """``billiard.einfo`` and ``billiard.pool`` as module objects."""
    einfo = types.ModuleType("billiard.einfo", "pgtasks.compat: billiard's einfo")
    einfo.ExceptionInfo = ExceptionInfo  # type: ignore[attr-defined]
    einfo.ExceptionWithTraceback = ExceptionWithTraceback  # type: ignore[attr-defined]
    pool = types.ModuleType("billiard.pool", "pgtasks.compat: billiard's pool")
    pool.Worker = Worker  # type: ignore[attr-defined]
    return {"billiard.einfo": einfo, "billiard.pool": pool}
