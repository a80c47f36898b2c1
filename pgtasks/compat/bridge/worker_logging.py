"""A Celery app's worker logging, set up as Celery's worker sets it up from the settings.

Without a ``setup_logging`` receiver (which takes over, and then nothing below is done, as in
Celery): ``worker_hijack_root_logger`` (on by default) removes the handlers the application
put on the root logger (Django's ``LOGGING``, say) before the worker adds its own; the
worker's lines are written in ``worker_log_format`` and a task's in ``worker_task_log_format``
(dates in ``worker_log_datefmt`` / ``worker_task_log_datefmt``); the root logger takes the
worker's level even when its handlers stay; and, once the worker serves,
``worker_redirect_stdouts`` (on by default) sends what tasks print to the
``celery.redirected`` logger at ``worker_redirect_stdouts_level`` (WARNING), in the worker's
process and in each prefork child."""

from __future__ import annotations

import logging
from typing import Any

from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.utils.log import mlevel
from pgtasks.engine.errors import ConfigurationError
from pgtasks.worker.logs import LOG_FORMAT, TASK_FORMAT, LineFormats, configure_logging

# The loggers Celery's worker empties when it takes the root logger over.
HIJACKED = ("", "celery", "celery.task", "celery.redirected")


def setup_worker_logging(conf: Any, loglevel: str, log_format: str, logfile: str | None = None) -> int | None:
    """Set up the worker's logging for a Celery app of settings ``conf`` at ``loglevel``
    (``log_format``: pgtasks' ``text`` or ``json``), to stderr or to ``logfile``. Returns the
    level at which to redirect standard output and error once the worker serves
    (:func:`redirect_stdouts`), or None not to (the setting is off, or a ``setup_logging``
    receiver took logging over). The signals carry the level as a number, as Celery's, and
    ``after_setup_logger`` / ``after_setup_task_logger`` are not sent when a receiver took
    logging over (Celery sends them only when it set logging up itself)."""
    level = loglevel.upper()
    number = mlevel(level)
    formats = LineFormats(
        _format(conf, "worker_log_format", LOG_FORMAT),
        _format(conf, "worker_task_log_format", TASK_FORMAT),
        _date_format(conf, "worker_log_datefmt"),
        _date_format(conf, "worker_task_log_datefmt"),
    )
    text_format, task_format = formats.text, formats.task
    custom = bool(signals.setup_logging.receivers)
    if custom:
        signals.setup_logging.send(
            sender=None, loglevel=number, logfile=logfile, format=text_format, colorize=False
        )
        return None
    if flag("worker_hijack_root_logger", conf.get("worker_hijack_root_logger")):
        for name in HIJACKED:
            logging.getLogger(name).handlers = []
    configure_logging(level, log_format, formats, logfile)
    logging.getLogger().setLevel(level)  # also when the application's handlers stay
    for signal, logger, shown in (
        (signals.after_setup_logger, logging.getLogger(), text_format),
        (signals.after_setup_task_logger, logging.getLogger("celery.task"), task_format),
    ):
        signal.send(
            sender=None, logger=logger, loglevel=number, logfile=logfile, format=shown, colorize=False
        )
    if not flag("worker_redirect_stdouts", conf.get("worker_redirect_stdouts")):
        return None
    return redirect_level(conf.get("worker_redirect_stdouts_level"))


def redirect_level(value: Any) -> int:
    """``worker_redirect_stdouts_level``: a level name (any case) or number; None: WARNING."""
    if value is None:
        return logging.WARNING
    try:
        return mlevel(value)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"worker_redirect_stdouts_level must be a log level such as 'WARNING' or 'INFO', not {value!r}"
        ) from None


def redirect_stdouts(app: Any, level: int | None) -> None:
    """``sys.stdout`` and ``sys.stderr`` to the ``celery.redirected`` logger at ``level``
    (nothing when ``level`` is None)."""
    if level is not None:
        app.log.redirect_stdouts(level)


def _format(conf: Any, setting: str, default: str) -> str:
    """A log format setting, checked as logging checks a format (Celery's worker fails with
    a traceback there). Fields are not: a filter of the application's may add its own."""
    value = conf.get(setting)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ConfigurationError(f"{setting} must be a logging format string, not {value!r}")
    try:
        logging.Formatter(value)
    except ValueError as exc:
        raise ConfigurationError(f"{setting} {value!r}: {exc}") from None
    return value


def _date_format(conf: Any, setting: str) -> str | None:
    """A ``strftime`` date format setting (None: logging's own)."""
    value = conf.get(setting)
    if value is not None and not isinstance(value, str):
        raise ConfigurationError(f"{setting} must be a strftime format string, not {value!r}")
    return value


def setup_beat_logging(app: Any, loglevel: str, logfile: str | None = None) -> bool:
    """``pgtasks beat``'s logging for a Celery ``app``, as Celery's beat sets it up (the worker's
    settings and signals, to stderr or ``logfile``; its standard output is not redirected:
    the beat runs no task); False for a pgtasks App, whose beat sets up its own."""
    if not isinstance(app, Celery):
        return False
    setup_worker_logging(app.conf, loglevel, "text", logfile)
    return True
