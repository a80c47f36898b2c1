"""billiard's ``billiard.einfo``: an exception with its formatted traceback, as Celery hands
it to ``on_failure``, ``on_retry`` and the failure signals (``einfo``)."""

from __future__ import annotations

import sys
import traceback
from typing import Any

__all__ = ["ExceptionInfo", "ExceptionWithTraceback"]


class ExceptionInfo:
    """Celery's ``einfo``: the exception, its type and its formatted traceback."""

    def __init__(
        self, exc_info: BaseException | tuple[Any, ...] | None = None, internal: bool = False
    ) -> None:
        """Of an exception, or as billiard's of ``sys.exc_info()``'s triple (the exception
        being handled when none is given)."""
        exc = exc_info if isinstance(exc_info, BaseException) else (exc_info or sys.exc_info())[1]
        if not isinstance(exc, BaseException):
            raise ValueError("ExceptionInfo() needs an exception: none is being handled")
        self.exception = exc
        self.type = type(exc)
        self.tb = exc.__traceback__
        self.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.internal = internal

    def __str__(self) -> str:
        return self.traceback

    def __repr__(self) -> str:
        return f"<ExceptionInfo: {self.exception!r}>"


class ExceptionWithTraceback:
    """billiard's exception carrier between processes: the exception and its formatted
    traceback."""

    def __init__(self, exc: BaseException, tb: str) -> None:
        self.exc = exc
        self.tb = tb
