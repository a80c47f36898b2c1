"""Exceptions stored as data and rebuilt only from types the application already knows.

A failed task's ``error`` column holds JSON: the exception's module, qualified name, message,
arguments (when JSON can carry them) and traceback text. Rebuilding looks the type up only in
modules already imported by this process that are trusted: builtins, pgtasks' own modules and
the modules the application registered tasks from (Celery's API trusts every imported module,
as Celery does). A row can never make a process import a module; anything else comes back as
:class:`~pgtasks.engine.errors.TaskError`.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import sys
import traceback
from collections.abc import Iterable
from typing import Any

from pgtasks.engine.errors import TaskError
from pgtasks.engine.json_tags import JsonSerializer

TRUSTED_PREFIXES = ("pgtasks.",)


MAX_MESSAGE_CHARS = 64 * 1024  # of an error's message and of its traceback, as stored
MAX_ARGS_CHARS = 64 * 1024  # an exception's args (as JSON) beyond this are not kept
_TAGGED = JsonSerializer()  # for arguments plain JSON cannot carry (bytes, datetimes)


_EXPECTED = "__pgtasks_expected__"


def mark_expected(exc: BaseException) -> None:
    """Say that ``exc`` is an error its task declares it may raise (Celery's ``throws``): it
    is stored as any failure, and the worker logs it at INFO without its traceback."""
    with contextlib.suppress(AttributeError, TypeError):  # a type that takes no attributes
        setattr(exc, _EXPECTED, True)


def is_expected(error_text: str | None) -> bool:
    """Whether a stored error was marked with :func:`mark_expected`."""
    try:
        fields = json.loads(error_text or "")
    except (ValueError, RecursionError):
        return False
    return isinstance(fields, dict) and fields.get("expected") is True


def encode_exception(exc: BaseException) -> str:
    """The JSON text stored in ``error`` for ``exc``. Never raises, whatever the exception: a
    ``__str__`` that raises, arguments JSON cannot walk, a cycle or a huge message. What could
    not be encoded is said in the stored message, so the task still ends with a precise error
    instead of failing to record it."""
    cls = type(exc)
    module = _safe(lambda: str(cls.__module__), "builtins")
    qualname = _safe(lambda: str(cls.__qualname__), "Exception")
    message = _safe(lambda: str(exc), None)
    if message is None:
        message = f"<message not recorded: str() of the {qualname} raised {_failure(lambda: str(exc))}>"
    tagged: str | None = None
    try:
        text = json.dumps(list(exc.args), allow_nan=False)
        args: list[Any] | None = json.loads(text) if len(text) <= MAX_ARGS_CHARS else None
    except BaseException:  # not plain JSON (bytes, a datetime) or hostile (RecursionError too)
        args, tagged = None, _tagged_args(exc)
    tb = _safe(lambda: "".join(traceback.format_exception(cls, exc, exc.__traceback__)), None)
    if tb is None:
        failure = _failure(lambda: traceback.format_exception(exc))
        tb = f"<traceback not recorded: formatting it raised {failure}>"
    fields = {
        "module": module,
        "type": qualname,
        "message": _truncate(message),
        "args": args,
        "traceback": _truncate(tb),
    }
    if tagged is not None:  # arguments JSON carries only with tags: rebuilt with them
        fields["tagged_args"] = tagged
    if _safe(lambda: getattr(exc, _EXPECTED, False) is True, False):
        fields["expected"] = True
    return json.dumps(fields)


def _tagged_args(exc: BaseException) -> str | None:
    """The exception's arguments as the JSON serializer writes them (bytes, dates, decimals
    as tags: ``UnicodeDecodeError`` carries bytes), or None when even that cannot."""
    try:
        raw = sum(len(a) for a in exc.args if isinstance(a, (str, bytes, bytearray)))
        if raw > MAX_ARGS_CHARS:  # a UnicodeDecodeError of a whole file: not encoded to be dropped
            return None
        text = _TAGGED.dumps(list(exc.args))
    except BaseException:
        return None
    return text if len(text) <= MAX_ARGS_CHARS else None


def _arguments(data: dict[str, Any]) -> Any:
    """The stored arguments: plain JSON, or the tagged form :func:`_tagged_args` wrote."""
    args = data.get("args")
    tagged = data.get("tagged_args")
    if args is None and isinstance(tagged, str):
        try:
            return _TAGGED.loads(tagged)
        except Exception:
            return None
    return args


def describe_failure(exc: BaseException) -> str:
    """``Type: message`` of an exception for an error message, even one whose ``__str__`` raises."""
    name = _safe(lambda: type(exc).__qualname__, "Exception")
    text = _safe(lambda: str(exc), None)
    return name if text is None else f"{name}: {_truncate(text, 500)}"


def _safe(make: Any, fallback: Any) -> Any:
    try:
        return make()
    except BaseException:  # hostile __str__/__repr__ (RecursionError too)
        return fallback


def _failure(call: Any) -> str:
    """The type name of what ``call`` raises (it was seen raising once)."""
    try:
        call()
    except BaseException as exc:
        return type(exc).__name__
    return "nothing the second time"


def _truncate(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters not recorded]"


def error_summary(error_text: str | None) -> str:
    """A one-line ``Type: message`` for display."""
    if not error_text:
        return ""
    try:
        data = json.loads(error_text)
        return f"{data.get('type', 'Error')}: {data.get('message', '')}"
    except (ValueError, AttributeError):
        return error_text[:200]


def error_type(error_text: str) -> tuple[str, str]:
    """The module and qualified name of a stored exception's class (empty strings when the
    text is not a stored exception)."""
    try:
        data = json.loads(error_text)
        return str(data.get("module", "")), str(data.get("type", ""))
    except (ValueError, AttributeError):
        return "", ""


def error_arguments(error_text: str) -> list[Any] | None:
    """The stored exception's arguments (None when they were not kept)."""
    try:
        args = _arguments(json.loads(error_text))
    except (ValueError, AttributeError):
        return None
    return args if isinstance(args, list) else None


def error_repr(error_text: str | None) -> str:
    """The stored exception as ``repr()`` shows it (``ValueError('x')``, ``KeyError('k')``):
    its arguments when they were kept, else its message."""
    if not error_text:
        return ""
    try:
        data = json.loads(error_text)
        name = str(data.get("type", "Error")).rpartition(".")[2]
        args = data.get("args")
        if not isinstance(args, list):
            args = [str(data.get("message", ""))]
    except (ValueError, AttributeError):
        return error_text[:200]
    return f"{name}({', '.join(repr(a) for a in args)})"


def decode_exception(
    error_text: str, trusted_modules: Iterable[str] = (), any_loaded: bool = False
) -> BaseException:
    """Rebuild the stored exception if its type is trusted, else a TaskError. ``any_loaded``
    (Celery's rule, for its API): every module this process has imported is trusted, still
    never importing one."""
    try:
        data = json.loads(error_text)
        module, qualname = str(data["module"]), str(data["type"])
        message, remote_tb = str(data.get("message", "")), str(data.get("traceback", ""))
        args = _arguments(data)
    except (ValueError, KeyError, TypeError, AttributeError):
        return TaskError("UnknownError", f"unreadable error record: {error_text[:200]!r}")
    cls = _trusted_class(module, qualname, set(trusted_modules), any_loaded)
    if cls is not None:
        for attempt in ((args,) if isinstance(args, list) else ()) + ([message],):
            try:
                exc = cls(*attempt)
            except Exception:
                continue
            exc.remote_traceback = remote_tb  # type: ignore[attr-defined]
            return exc
    name = qualname if module == "builtins" else f"{module}.{qualname}"
    return TaskError(name, message, remote_tb)


def _trusted_class(
    module: str, qualname: str, trusted: set[str], any_loaded: bool
) -> type[BaseException] | None:
    if module == "builtins":
        owner: Any = builtins
    elif any_loaded or module in trusted or module.startswith(TRUSTED_PREFIXES):
        owner = sys.modules.get(module)  # never import: only what is already loaded
        if owner is None:
            return None
    else:
        return None
    for part in qualname.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    if isinstance(owner, type) and issubclass(owner, Exception):
        return owner
    return None
