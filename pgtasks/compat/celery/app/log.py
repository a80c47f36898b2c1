"""Celery's ``celery.app.log``: :class:`Logging` (``app.log``: logging set up the way a
Celery worker sets it up, for programs that embed one) and :class:`TaskFormatter`, the
formatter of task loggers.

``pgtasks worker`` sets up its own logging (bridge/worker_start.py, with the same signals);
``app.log`` is for code that calls it itself.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from pgtasks.compat.celery import signals
from pgtasks.compat.celery._state import current_request
from pgtasks.compat.celery.utils.log import LoggingProxy, mlevel
from pgtasks.worker.logs import LOG_FORMAT, TASK_FORMAT, install_task_fields

__all__ = ["Logging", "TaskFormatter", "colored"]


class TaskFormatter(logging.Formatter):
    """A formatter for task loggers: records get ``task_id`` and ``task_name`` (``???`` outside
    a task), as in Celery's ``worker_task_log_format``."""

    def format(self, record: logging.LogRecord) -> str:
        request = current_request()
        if request is not None and request.id:
            record.__dict__.setdefault("task_id", request.id)
            record.__dict__.setdefault("task_name", request.task)
        else:
            record.__dict__.setdefault("task_id", "???")
            record.__dict__.setdefault("task_name", "???")
        return super().format(record)


RESET = "\x1b[0m"
STYLES = {
    **{
        name: f"\x1b[1;{30 + n}m"
        for n, name in enumerate(("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"))
    },
    "bold": "\x1b[1m",
    "underline": "\x1b[4m",
    "blink": "\x1b[5m",
    "reverse": "\x1b[7m",
}


class colored:
    """Text in ANSI colours, as ``app.log.colored()`` gives it: ``c.red('x')``, ``c.bold(...)``,
    nested and joined with ``+``; plain text when not ``enabled``."""

    def __init__(self, *parts: Any, enabled: bool = True, style: str = "") -> None:
        self.parts = parts
        self.enabled = enabled
        self.style = style

    def __getattr__(self, name: str) -> Any:
        if name not in STYLES:
            raise AttributeError(f"colored has no style {name!r}: one of {', '.join(STYLES)}")
        return lambda *parts: colored(*parts, enabled=self.enabled, style=STYLES[name])

    def __str__(self) -> str:
        text = "".join(str(part) for part in self.parts)
        return f"{self.style}{text}{RESET}" if self.enabled and self.style else text

    def __add__(self, other: Any) -> colored:
        return colored(self, other, enabled=self.enabled)

    def no_color(self) -> str:
        """The text without colours."""
        return "".join(p.no_color() if isinstance(p, colored) else str(p) for p in self.parts)


class Logging:
    """``app.log``: Celery's logging set-up. Differs from Celery in that handlers a logger has
    already are kept (``worker_hijack_root_logger`` is not read, as ``pgtasks worker`` keeps
    them) and log lines are not coloured (``colorize`` reaches the signals and ``colored``)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loglevel = logging.WARNING
        self.format: str = app.conf.worker_log_format or LOG_FORMAT
        self.task_format: str = app.conf.worker_task_log_format or TASK_FORMAT
        self.colorize: bool | None = app.conf.worker_log_color
        self.already_setup = False

    def setup(
        self,
        loglevel: int | str | None = None,
        logfile: str | None = None,
        redirect_stdouts: bool = False,
        redirect_level: int | str = "WARNING",
        colorize: bool | None = None,
        hostname: str | None = None,
    ) -> list[Any] | None:
        """:meth:`setup_logging_subsystem`, then stdout and stderr to the ``celery.redirected``
        logger with ``redirect_stdouts`` (unless a ``setup_logging`` receiver took over)."""
        handled = self.setup_logging_subsystem(loglevel, logfile, colorize=colorize, hostname=hostname)
        if not handled and redirect_stdouts:
            self.redirect_stdouts(redirect_level)
        os.environ.update(
            CELERY_LOG_LEVEL=str(loglevel) if loglevel else "",
            CELERY_LOG_FILE=str(logfile) if logfile else "",
        )
        return handled

    def setup_logging_subsystem(
        self,
        loglevel: int | str | None = None,
        logfile: str | None = None,
        format: str | None = None,
        colorize: bool | None = None,
        hostname: str | None = None,
        **kwargs: Any,
    ) -> list[Any] | None:
        """Once per ``Logging`` (None after): send ``setup_logging``; without a receiver, give
        the root logger a handler (to ``logfile``, else stderr) unless it has one, set its
        level, send ``after_setup_logger`` and set up the task logger. Returns the receivers'
        replies (empty: pgtasks set logging up)."""
        if self.already_setup:
            return None
        self.already_setup = True
        level = mlevel(loglevel or self.loglevel)
        format = format or self.format
        colorize = self.supports_color(colorize, logfile)
        options = {"loglevel": level, "logfile": logfile, "format": format, "colorize": colorize}
        receivers = signals.setup_logging.send(sender=None, **options)
        if receivers:
            return receivers
        install_task_fields()
        root = logging.getLogger()
        self._add_handler(root, logfile, logging.Formatter(format))
        root.setLevel(level)
        signals.after_setup_logger.send(sender=None, logger=root, **options)
        self.setup_task_loggers(level, logfile, colorize=colorize)
        return []

    def setup_task_loggers(
        self,
        loglevel: int | str | None = None,
        logfile: str | None = None,
        format: str | None = None,
        colorize: bool | None = None,
        propagate: bool = False,
        **kwargs: Any,
    ) -> logging.Logger:
        """The ``celery.task`` logger (the parent of ``get_task_logger``'s) in ``task_format``
        at ``loglevel``, propagating only with ``propagate``; sends ``after_setup_task_logger``."""
        logger = logging.getLogger("celery.task")
        level = mlevel(loglevel or self.loglevel)
        format = format or self.task_format
        self._add_handler(logger, logfile, TaskFormatter(format))
        logger.setLevel(level)
        logger.propagate = propagate
        signals.after_setup_task_logger.send(
            sender=None, logger=logger, loglevel=level, logfile=logfile, format=format, colorize=colorize
        )
        return logger

    @staticmethod
    def _add_handler(logger: logging.Logger, logfile: str | None, formatter: logging.Formatter) -> None:
        """A handler to ``logfile`` (else stderr), unless ``logger`` has one already (its
        ``NullHandler`` from ``get_logger`` is none)."""
        if any(not isinstance(h, logging.NullHandler) for h in logger.handlers):
            return
        handler = logging.FileHandler(logfile) if logfile else logging.StreamHandler(sys.stderr)
        handler.setFormatter(formatter)
        logger.addHandler(handler)

    def redirect_stdouts(self, loglevel: int | str | None = None, name: str = "celery.redirected") -> None:
        """``sys.stdout`` and ``sys.stderr`` to the logger ``name`` (Celery's environment
        variables say so to child processes)."""
        self.redirect_stdouts_to_logger(logging.getLogger(name), loglevel=loglevel)
        os.environ.update(CELERY_LOG_REDIRECT="1", CELERY_LOG_REDIRECT_LEVEL=str(loglevel or ""))

    def redirect_stdouts_to_logger(
        self,
        logger: logging.Logger,
        loglevel: int | str | None = None,
        stdout: bool = True,
        stderr: bool = True,
    ) -> LoggingProxy:
        """Replace ``sys.stdout`` and/or ``sys.stderr`` by a :class:`LoggingProxy` of
        ``logger``; return it."""
        proxy = LoggingProxy(logger, loglevel)
        if stdout:
            sys.stdout = proxy
        if stderr:
            sys.stderr = proxy
        return proxy

    def supports_color(self, colorize: bool | None = None, logfile: str | None = None) -> bool:
        """Whether to colour: not when ``colorize`` (else ``worker_log_color``) is False, nor
        to a log file, nor when stderr is not a terminal."""
        colorize = self.colorize if colorize is None else colorize
        if colorize is False or logfile:
            return False
        return bool(getattr(sys.stderr, "isatty", lambda: False)())

    def colored(self, logfile: str | None = None, enabled: bool | None = None) -> colored:
        """A :class:`colored` enabled as :meth:`supports_color` says."""
        return colored(enabled=self.supports_color(enabled, logfile))

    def get_default_logger(self, name: str = "celery", **kwargs: Any) -> logging.Logger:
        """The logger ``name``."""
        return logging.getLogger(name)
