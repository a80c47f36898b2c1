"""billiard's ``billiard.einfo``: an exception with its formatted traceback, as Celery hands
it to ``on_failure``, ``on_retry`` and the failure signals (``einfo``)."""

from __future__ import annotations

import traceback

__all__ = ["ExceptionInfo", "ExceptionWithTraceback"]


class ExceptionInfo:
    """Celery's ``einfo``: the exception, its type and its formatted traceback."""

    def __init__(self, exc: BaseException) -> None:
        self.exception = exc
        self.type = type(exc)
        self.tb = exc.__traceback__
        self.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.internal = False

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
