"""Celery's ``celery.utils.serialization``: base64 text and Celery's reading of booleans."""

from __future__ import annotations

import base64
import importlib
import pickle
from collections.abc import Callable
from typing import Any

__all__ = [
    "UnpickleableExceptionWrapper",
    "b64decode",
    "b64encode",
    "create_exception_cls",
    "find_pickleable_exception",
    "get_pickleable_etype",
    "get_pickleable_exception",
    "get_pickled_exception",
    "strtobool",
    "subclass_exception",
]


def b64encode(s: bytes) -> str:
    return base64.b64encode(s).decode("ascii")


def b64decode(s: str | bytes) -> bytes:
    return base64.b64decode(s)


def strtobool(term: Any, table: dict[str, bool] | None = None) -> bool:
    """``'yes'``/``'no'``, ``'1'``/``'0'``, ``'true'``/``'false'``, ``'on'``/``'off'`` as a bool."""
    if isinstance(term, str):
        table = table or {
            "false": False,
            "no": False,
            "0": False,
            "off": False,
            "true": True,
            "yes": True,
            "1": True,
            "on": True,
        }
        try:
            return table[term.lower()]
        except KeyError:
            raise TypeError(f"Cannot coerce {term!r} to type bool") from None
    return bool(term)


def subclass_exception(name: str, parent: type[BaseException], module: str) -> type[BaseException]:
    """A new exception class ``name`` of ``module``, subclassing ``parent``."""
    return type(name, (parent,), {"__module__": module})


def create_exception_cls(
    name: str, module: str, parent: type[BaseException] | None = None
) -> type[BaseException]:
    """A new exception class ``name`` of ``module`` (subclassing ``parent``, else Exception)."""
    return subclass_exception(name, parent or Exception, module)


def _pickles(
    value: Any, loads: Callable[[bytes], Any] = pickle.loads, dumps: Callable[[Any], bytes] = pickle.dumps
) -> bool:
    try:
        loads(dumps(value))
    except Exception:
        return False
    return True


def find_pickleable_exception(
    exc: BaseException,
    loads: Callable[[bytes], Any] = pickle.loads,
    dumps: Callable[[Any], bytes] = pickle.dumps,
) -> BaseException | None:
    """The nearest class of ``exc``'s ancestry that pickles with its arguments, as an
    instance; None when none does."""
    for cls in type(exc).__mro__:
        if cls in (BaseException, object) or not issubclass(cls, BaseException):
            continue
        try:
            candidate = cls(*exc.args)
        except Exception:
            continue
        if _pickles(candidate, loads, dumps):
            return candidate
    return None


class UnpickleableExceptionWrapper(Exception):
    """An exception that would not pickle, carried as its module, class name, arguments (as
    text where they do not pickle) and text; ``restore()`` gives an exception of that name."""

    def __init__(
        self, exc_module: str, exc_cls_name: str, exc_args: tuple[Any, ...], text: str | None = None
    ) -> None:
        safe_args = tuple(arg if _pickles(arg) else repr(arg) for arg in exc_args)
        self.exc_module = exc_module
        self.exc_cls_name = exc_cls_name
        self.exc_args = safe_args
        self.text = text
        super().__init__(exc_module, exc_cls_name, safe_args, text)

    def restore(self) -> BaseException:
        """An exception of the original class when it can be imported, else of a class made
        with its name."""
        try:
            cls = getattr(importlib.import_module(self.exc_module), self.exc_cls_name)
            if isinstance(cls, type) and issubclass(cls, BaseException):
                return cls(*self.exc_args)
        except Exception:
            pass
        return create_exception_cls(self.exc_cls_name, self.exc_module)(*self.exc_args)

    def __str__(self) -> str:
        return self.text or ""

    @classmethod
    def from_exception(cls, exc: BaseException) -> UnpickleableExceptionWrapper:
        return cls(type(exc).__module__, type(exc).__name__, tuple(getattr(exc, "args", ()) or ()), str(exc))


def get_pickleable_exception(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else the nearest ancestor class that does, else a wrapper."""
    if _pickles(exc):
        return exc
    nearest = find_pickleable_exception(exc)
    return nearest if nearest is not None else UnpickleableExceptionWrapper.from_exception(exc)


def get_pickleable_etype(
    cls: type[BaseException],
    loads: Callable[[bytes], Any] = pickle.loads,
    dumps: Callable[[Any], bytes] = pickle.dumps,
) -> type[BaseException]:
    """``cls`` if the class pickles, else Exception."""
    return cls if _pickles(cls, loads, dumps) else Exception


def get_pickled_exception(exc: BaseException) -> BaseException:
    """The exception a wrapper stands for; any other exception as it is."""
    return exc.restore() if isinstance(exc, UnpickleableExceptionWrapper) else exc
