"""kombu's ``retry_over_time``: call a function until it stops failing, with growing pauses
(what ``Connection.ensure_connection`` and Celery's test manager use)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from itertools import count
from typing import Any

__all__ = ["intervals", "retry_over_time"]


def intervals(start: float, step: float, maximum: float) -> Iterator[float]:
    """``start``, then ``step`` more each time, then the last one below ``maximum + start``
    for ever (kombu's pauses)."""
    value = last = start
    while value < maximum + start:
        yield value
        last, value = value, value + step
    while True:
        yield last


def retry_over_time(
    fun: Callable[..., Any],
    catch: Sequence[type[BaseException]] | type[BaseException],
    args: Sequence[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    errback: Callable[[BaseException, Iterator[float], int], float] | None = None,
    max_retries: int | None = None,
    interval_start: float = 2,
    interval_step: float = 2,
    interval_max: float = 30,
    callback: Callable[[], Any] | None = None,
    timeout: float | None = None,
) -> Any:
    """Call ``fun(*args, **kwargs)`` until it returns without raising one of ``catch``; raise
    the last error after ``max_retries`` retries (None: no limit) or once ``timeout`` seconds
    passed. Between tries it sleeps the next of :func:`intervals`, or what
    ``errback(exc, intervals, retries)`` returns when given; ``callback()`` runs before each
    pause."""
    caught = tuple(catch) if isinstance(catch, (list, tuple)) else (catch,)
    pauses = intervals(interval_start, interval_step, interval_max)
    deadline = None if not timeout else time.monotonic() + timeout
    for retries in count():
        try:
            return fun(*(args or ()), **(kwargs or {}))
        except caught as exc:
            if max_retries is not None and retries >= max_retries:
                raise
            if deadline is not None and time.monotonic() > deadline:
                raise
            if callback is not None:
                callback()
            pause = float(errback(exc, pauses, retries) if errback else next(pauses))
            if pause > 0:
                time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover
