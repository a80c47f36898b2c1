"""The worker's log as Celery users read it, or as JSON for log collectors.

Every record carries ``task_name`` and ``task_id`` (``???`` outside a task, as in Celery),
read from the engine's task context by a record factory, so a record from the task's own
logger (``get_task_logger(__name__)``, or any logger but pgtasks' own) inside a task reads
``[time: LEVEL/ForkPoolWorker-1] proj.add[id]: message``, Celery's task format. A record's
``exc_text`` (a stored traceback) follows its message, in either format.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from logging.handlers import WatchedFileHandler
from typing import Any

from pgtasks.engine.context import running_context
from pgtasks.engine.errors import ConfigurationError
from pgtasks.worker.std_streams import log_stream

LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"
TASK_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(task_name)s[%(task_id)s]: %(message)s"
LOG_FORMATS = ("text", "json")
NO_TASK = "???"
OWN_LOGGERS = "pgtasks."  # the worker's own lines name the task themselves

# The lines of a task's life, logged with a mapping (``msg % data``) that is also the record's
# ``data`` (Celery's trace records: ``record.data['id']``, ``['args']``, ...).
LOG_RECEIVED = "Task %(name)s[%(id)s] received"
LOG_RECEIVED_INPUTS = "Task %(name)s[%(id)s] received: %(inputs)s"
LOG_SUCCESS = "Task %(name)s[%(id)s] succeeded in %(runtime).3fs: %(return_value)s"
LOG_RETRY = "Task %(name)s[%(id)s] retry: %(exc)s"
LOG_FAILURE = "Task %(name)s[%(id)s] %(description)s: %(exc)s"
LOG_WAITS = "Task %(name)s[%(id)s] waits (durable wait: its worker slot is free) after %(runtime).3fs"
LOG_RELEASED = (
    "Task %(name)s[%(id)s] released after %(runtime).3fs: it will run again from its last checkpoint"
)
LOG_ABANDONED = "Task %(name)s[%(id)s] abandoned: cancelled or taken over by another worker"


class TaskLogData(dict[str, Any]):
    """A task log record's mapping: ``id``, ``name`` and the line's own fields, and ``args``
    and ``kwargs`` as the sender asked them shown (Celery's ``argsrepr``/``kwargsrepr``) or as
    reprs of the stored arguments, worked out only if a handler reads them."""

    def __init__(self, task_id: str, name: str, arguments: Callable[[], tuple[str, str]], **fields: Any):
        super().__init__(id=task_id, name=name, **fields)
        self._arguments = arguments

    def __missing__(self, key: str) -> str:
        if key not in ("args", "kwargs"):
            raise KeyError(key)
        self["args"], self["kwargs"] = self._arguments()
        return str(self[key])


def log_task(
    logger: logging.Logger, level: int, msg: str, data: TaskLogData, traceback: str | None = None
) -> None:
    """Log ``msg % data`` with ``data`` as the record's ``data`` (and ``traceback`` after it)."""
    if not logger.isEnabledFor(level):
        return
    record = logger.makeRecord(logger.name, level, "(worker)", 0, msg, (data,), None, extra={"data": data})
    record.exc_text = traceback.rstrip("\n") if traceback else None
    logger.handle(record)


@dataclass(frozen=True, slots=True)
class LineFormats:
    """The text log's formats: ``text`` for the worker's lines, ``task`` for those logged inside
    a task (Celery's by default), each with its ``strftime`` date format (None: logging's)."""

    text: str = LOG_FORMAT
    task: str = TASK_FORMAT
    datefmt: str | None = None
    task_datefmt: str | None = None


class TaskFormatter(logging.Formatter):
    """The worker's format, and the task format for records logged inside a task."""

    def __init__(self, formats: LineFormats = LineFormats()) -> None:
        super().__init__(formats.text, formats.datefmt)
        self._task = logging.Formatter(formats.task, formats.task_datefmt)

    def format(self, record: logging.LogRecord) -> str:
        in_task = getattr(record, "task_id", NO_TASK) != NO_TASK
        if in_task and not record.name.startswith(OWN_LOGGERS):
            return self._task.format(record)
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, process, message, task_name, task_id,
    exc_info (the traceback text, or null)."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        task_id = getattr(record, "task_id", NO_TASK)
        fields: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "process": record.processName,
            "message": record.getMessage(),
            "task_name": None if task_id == NO_TASK else getattr(record, "task_name", None),
            "task_id": None if task_id == NO_TASK else task_id,
            "exc_info": record.exc_text or None,
        }
        return json.dumps(fields, default=str)


def install_task_fields() -> None:
    """Give every log record ``task_name`` and ``task_id`` (once per process; children
    forked later inherit it)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "pgtasks_task_fields", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        ctx = running_context()
        record.task_name = NO_TASK if ctx is None else ctx.record.name
        record.task_id = NO_TASK if ctx is None else ctx.record.task_id
        return record

    factory.pgtasks_task_fields = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def configure_logging(
    loglevel: str, log_format: str = "text", formats: LineFormats = LineFormats(), logfile: str | None = None
) -> None:
    """Log to stderr (or to the file ``logfile``, as Celery's ``--logfile``) at ``loglevel``
    in ``log_format`` (``text``: lines in ``formats``, Celery's by default; or ``json``),
    unless the root logger already has handlers (the application configured logging: then
    only the task fields are added to its records, and a ``logfile`` not among them is
    warned of)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format {log_format!r}: one of {', '.join(LOG_FORMATS)}")
    install_task_fields()
    root = logging.getLogger()
    if root.handlers:
        if logfile and not any(_writes_to(h, logfile) for h in root.handlers):
            logging.getLogger(__name__).warning(
                "--logfile %s is not used: the application configured logging itself "
                "(the root logger has handlers); its handlers get the worker's lines",
                logfile,
            )
        return
    # not sys.stderr: a task may close that
    handler = file_handler(logfile) if logfile else logging.StreamHandler(log_stream())
    handler.setFormatter(JsonFormatter() if log_format == "json" else TaskFormatter(formats))
    root.addHandler(handler)
    root.setLevel(loglevel.upper())


def _writes_to(handler: logging.Handler, path: str) -> bool:
    return isinstance(handler, logging.FileHandler) and handler.baseFilename == os.path.abspath(path)


def log_to_file_of_process(logfile: str, path: str) -> None:
    """In a pool process: write what the root logger's handler of ``logfile`` wrote to
    ``path`` instead (``--logfile`` with ``%I``: a file per process, as Celery's)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, WatchedFileHandler) and handler.baseFilename == os.path.abspath(logfile):
            replacement = file_handler(path)
            replacement.setFormatter(handler.formatter)
            root.removeHandler(handler)
            root.addHandler(replacement)


def file_handler(path: str) -> WatchedFileHandler:
    """Celery's handler of ``--logfile``: reopened when logrotate moves the file."""
    try:
        return WatchedFileHandler(path, encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot open the log file {path}: {exc.strerror}") from exc


def logs_json() -> bool:
    """True when the root logger writes JSON lines (anything else on stderr would break them)."""
    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger().handlers)


RESULT_REPR_MAX = 1024  # Celery's resultrepr_maxsize
RESULT_PARSE_MAX = 64 * 1024  # larger outputs are not parsed for a log line


def clip(text: str, limit: int = RESULT_REPR_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def result_repr(output: str | None) -> str:
    """The repr of a task's result as its success line shows it, from the stored JSON (other
    serializations, and outputs too large to parse for a log line, are shown as stored)."""
    if output is None:
        return "None"
    if len(output) <= RESULT_PARSE_MAX:
        try:
            return clip(repr(json.loads(output)))
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse: as stored
            pass
    return clip(output)


def retry_repr(error: str | None, countdown: float) -> str:
    """Celery's text of the retry a task asked for: ``Retry in 5s: ValueError('message')``, or
    ``Retry in 5s`` when it gave no exception."""
    when = f"Retry in {countdown:g}s"
    return f"{when}: {error_repr(error)[0]}" if error else when


def error_repr(error: str | None) -> tuple[str, str | None]:
    """``Type('message')`` of a stored error, as Celery's ``raised unexpected`` line shows
    it, and its traceback text (None when none was stored)."""
    try:
        fields = json.loads(error or "")
    except (ValueError, RecursionError):
        return clip(repr(error)), None
    if not isinstance(fields, dict):
        return clip(repr(error)), None
    name = str(fields.get("type") or "Exception")
    args = fields.get("args")
    if args == [] and fields.get("message"):
        args = None  # built without arguments but with a __str__ (pydantic's ValidationError)
    try:
        shown = (
            ", ".join(repr(a) for a in args) if isinstance(args, list) else repr(fields.get("message", ""))
        )
    except RecursionError:  # arguments nested too deep to show: the message says it
        shown = repr(fields.get("message", ""))
    traceback = fields.get("traceback")
    return clip(f"{name}({shown})"), traceback if isinstance(traceback, str) else None
