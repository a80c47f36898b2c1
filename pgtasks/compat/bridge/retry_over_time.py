"""kombu's ``retry_over_time``: call a function until it stops failing, with growing pauses
(what ``Connection.ensure_connection`` and Celery's test manager use)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import count
from typing import Any

__all__ = ["retry_over_time"]


def retry_over_time(
    fun: Callable[..., Any],
    catch: Sequence[type[BaseException]] | type[BaseException],
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    errback: Callable[[BaseException, float], float | None] | None = None,
    max_retries: int | None = None,
    interval_start: float = 2.0,
    interval_step: float = 2.0,
    interval_max: float = 30.0,
    callback: Callable[[], Any] | None = None,
    timeout: float | None = None,
) -> Any:
    """Call ``fun`` until it returns without raising one of ``catch``: after each failure wait
    ``interval_start``, then ``interval_step`` more each time up to ``interval_max``; raise the
    last error after ``max_retries`` retries (None: no limit) or once ``timeout`` seconds
    passed. ``errback(exc, interval)`` may return another interval; ``callback()`` runs
    before each wait."""
    caught = tuple(catch) if isinstance(catch, (list, tuple)) else (catch,)
    deadline = None if timeout is None else time.monotonic() + timeout
    interval = interval_start
    for retries in count():
        try:
            return fun(*args, **(kwargs or {}))
        except caught as exc:
            if max_retries is not None and retries >= max_retries:
                raise
            if deadline is not None and time.monotonic() >= deadline:
                raise
            pause = interval
            if errback is not None:
                chosen = errback(exc, interval)
                pause = interval if chosen is None else chosen
            if callback is not None:
                callback()
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            interval = min(interval + interval_step, interval_max)
    raise AssertionError("unreachable")  # pragma: no cover
