"""``celery.utils.log``: ``get_task_logger``, ``get_logger``, ``mlevel``, ``LoggingProxy`` and
``ColorFormatter``.

Task loggers are children of ``celery.task``, as in Celery, so a handler on that logger sees
every task's records. As kombu's ``get_logger`` does, a logger handed out without a handler gets
a ``NullHandler``: where no logging is set up (a web process, a script sending tasks), its
warnings are dropped instead of reaching stderr through logging's last resort; where it is (a
worker), its records go on to the root logger's handlers."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "LOG_LEVELS",
    "ColorFormatter",
    "LoggingProxy",
    "base_logger",
    "get_logger",
    "get_task_logger",
    "mlevel",
    "task_logger",
    "worker_logger",
]

LOG_LEVELS = dict(logging._nameToLevel)


def _quiet(log: logging.Logger) -> logging.Logger:
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return log


base_logger = logger = _quiet(logging.getLogger("celery"))
task_logger = _quiet(logging.getLogger("celery.task"))
worker_logger = _quiet(logging.getLogger("celery.worker"))


class ColorFormatter(logging.Formatter):
    """Celery's formatter that colours a record by its level (ANSI: DEBUG blue, WARNING
    yellow, ERROR red, CRITICAL magenta; INFO plain) when ``use_color``, as named in logging
    configurations (``"()": "celery.utils.log.ColorFormatter"``). A message that cannot be
    formatted gives a line saying so instead of an exception from the handler."""

    COLORS = {"DEBUG": "\x1b[1;34m", "WARNING": "\x1b[1;33m", "ERROR": "\x1b[1;31m", "CRITICAL": "\x1b[1;35m"}
    RESET = "\x1b[0m"

    def __init__(self, fmt: str | None = None, use_color: bool = True, **kwargs: Any) -> None:
        super().__init__(fmt, **kwargs)
        self.use_color = use_color

    def formatException(self, ei: Any) -> str:
        if ei and not isinstance(ei, tuple):
            ei = sys.exc_info()
        return super().formatException(ei)

    def format(self, record: logging.LogRecord) -> str:
        try:
            text = super().format(record)
        except Exception as exc:  # a record whose arguments do not fit its message
            return f"<Unrepresentable {type(record.msg).__name__} {record.msg!r}: {exc!r}>"
        color = self.COLORS.get(record.levelname) if self.use_color else None
        return f"{color}{text}{self.RESET}" if color else text


def get_logger(name: str | logging.Logger) -> logging.Logger:
    """The logger ``name`` (or the logger given), with a ``NullHandler`` if it had no handler."""
    return _quiet(name if isinstance(name, logging.Logger) else logging.getLogger(name))


def get_task_logger(name: str) -> logging.Logger:
    """A logger for task modules, a child of ``celery.task``."""
    if name in ("celery", "celery.task"):
        raise RuntimeError(f"Logger name {name!r} is reserved!")
    log = get_logger(name)
    if log.parent is logging.getLogger() or log.parent is None:
        log.parent = task_logger
    return log


class LoggingProxy:
    """A file-like object writing to a logger: what ``app.log.redirect_stdouts_to_logger``
    puts in place of ``sys.stdout``/``sys.stderr``. Each write is one record at ``loglevel``
    (ERROR by default); a write made while a handler of the logger writes (to the redirected
    stream itself) goes to the original stream instead of looping."""

    mode = "w"
    name = None
    closed = False

    def __init__(self, logger: logging.Logger, loglevel: int | str | None = None) -> None:
        self.logger = logger
        self.loglevel = logging.ERROR if loglevel is None else mlevel(loglevel)
        self._writing = threading.local()

    def write(self, data: str) -> int:
        if getattr(self._writing, "active", False):
            if sys.__stderr__ is not None:
                sys.__stderr__.write(data)
            return len(data)
        text = data.rstrip("\n")
        if text.strip():
            self._writing.active = True
            try:
                self.logger.log(self.loglevel, text)
            finally:
                self._writing.active = False
        return len(data)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Nothing to flush: each write is a record already."""

    def close(self) -> None:
        self.closed = True

    def isatty(self) -> bool:
        return False


def mlevel(level: int | str) -> int:
    """A level number from a number or a name (``'info'`` too); an unknown name is refused."""
    if isinstance(level, int):
        return level
    number = logging.getLevelName(str(level).upper())
    if not isinstance(number, int):
        raise ValueError(f"unknown log level {level!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return number
