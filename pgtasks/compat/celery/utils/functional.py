"""Celery's ``celery.utils.functional``: small helpers over callables and iterables."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["chunks", "first", "is_list", "maybe_list", "noop"]


def noop(*args: Any, **kwargs: Any) -> None:
    """Take anything, do nothing."""


def first(predicate: Any, iterable: Iterable[Any]) -> Any:
    """The first item the predicate accepts (any true item when it is None), else None."""
    for item in iterable:
        if (predicate or bool)(item):
            return item
    return None


def is_list(obj: Any, scalars: tuple[type, ...] = (dict, str, bytes)) -> bool:
    """True for an iterable that is not a mapping or a string."""
    return isinstance(obj, Iterable) and not isinstance(obj, scalars)


def maybe_list(obj: Any, scalars: tuple[type, ...] = (dict, str, bytes)) -> Any:
    """``obj`` in a list unless it is one already (None stays None)."""
    return obj if obj is None or is_list(obj, scalars) else [obj]


def chunks(it: Iterable[Any], n: int) -> Iterator[list[Any]]:
    """Lists of ``n`` items of ``it`` (the last one shorter)."""
    batch: list[Any] = []
    for item in it:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch
