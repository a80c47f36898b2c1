"""The one background loop of pgtasks: a daemon thread that runs a round, waits, and again.

Every periodic thread of the worker and the beat is a :class:`Loop`: the heartbeat, the
maintenance round, the due-time timer, the pruner, the health file, the listeners, the beat and
its source follower. A loop has a ``name`` (its thread's), a ``body`` (one round), an
``interval`` between rounds, and an :class:`ErrorPolicy` for a round that raises.

- ``start()`` starts the thread; the first round runs after ``start_after`` seconds (0: at once).
- A round's body may return the seconds to wait before the next round (a timer that knows when
  it is due next); None waits ``interval``.
- ``poke()`` ends the current wait at once (the next round runs now); a poke that arrives while
  a round runs is kept, so the round after it is not missed.
- ``stop(timeout)`` ends the wait at once, lets a running round finish (a long body may look at
  ``stopping`` to cut itself short) and joins the thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pgtasks.support.backoff import Backoff, Retry


@dataclass(frozen=True, slots=True)
class ErrorPolicy:
    """What a loop does when its round raises.

    An error of one of the ``outage`` types (a lost database: the caller names them, this layer
    knows none) is logged once per outage as ``"<what>: <error>"``: at ``level`` for the first
    failed round, at DEBUG for the next ones, and ``recovered`` (when given) at WARNING when a
    round succeeds again. Any other error is a bug: logged as ``what`` with its traceback every
    time, and the loop ends there if ``stop_on_bug``. While rounds fail, the loop waits by
    ``backoff`` (the message then says when it retries) instead of its interval.
    """

    log: logging.Logger
    what: str
    outage: tuple[type[BaseException], ...] = ()
    level: int = logging.WARNING
    recovered: str | None = None
    backoff: Backoff | None = None
    stop_on_bug: bool = False


class Loop:
    """``body`` on a daemon thread named ``name``, every ``interval`` seconds until stopped."""

    def __init__(
        self,
        name: str,
        body: Callable[[], float | None],
        interval: float,
        errors: ErrorPolicy,
        *,
        start_after: float = 0.0,
    ) -> None:
        if not interval >= 0:
            raise ValueError(f"loop {name}: interval must be >= 0 seconds, not {interval!r}")
        self.name = name
        self.interval = interval
        self._body = body
        self._errors = errors
        self._start_after = start_after
        self._stopped = threading.Event()
        self._woken = threading.Event()  # set by poke() and stop(): ends the current wait
        self._retry = None if errors.backoff is None else Retry(errors.backoff)  # while failing
        self._failing = False  # the last round failed with an outage error
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def poke(self) -> None:
        """Run the next round now (at the end of the current one, if one is running)."""
        self._woken.set()

    def stop(self, timeout: float | None = 10.0) -> bool:
        """End the loop: the wait ends at once, a running round finishes. Waits up to
        ``timeout`` seconds for the thread (0: not at all; never from inside a round, which
        ends the loop when it returns); True once the thread has ended."""
        self._stopped.set()
        self._woken.set()
        if self._thread.ident is None or self._thread is threading.current_thread():
            return not self._thread.is_alive()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called (a long round checks it to end early)."""
        return self._stopped.is_set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds``, or less if poked or stopped; True if stopped."""
        if seconds > 0 and not self._stopped.is_set():
            self._woken.wait(seconds)
        return self._stopped.is_set()

    def _run(self) -> None:
        if self._wait(self._start_after):
            return
        while True:
            self._woken.clear()  # before the round: a poke during it ends the next wait at once
            if self._stopped.is_set():
                return
            try:
                returned = self._body()
            except Exception as exc:
                wait = self._failed(exc)
                if wait is None:
                    return
            else:
                wait = self._succeeded(returned)
            if self._wait(wait):
                return

    def _failed(self, exc: Exception) -> float | None:
        """Report a failed round; the wait before the next, or None to end the loop."""
        errors = self._errors
        pause = None if self._retry is None else self._retry.next_delay()
        if isinstance(exc, errors.outage):
            level = logging.DEBUG if self._failing else errors.level  # once per outage
            self._failing = True
            if pause is None:
                errors.log.log(level, "%s: %s", errors.what, exc)
            else:
                errors.log.log(level, "%s, retrying in %.1fs: %s", errors.what, pause, exc)
        else:
            errors.log.exception("%s", errors.what)
            if errors.stop_on_bug:
                return None
        return self.interval if pause is None else pause

    def _succeeded(self, returned: float | None) -> float:
        """Close an outage if one was going on; the wait before the next round."""
        if self._retry is not None:
            self._retry.reset()
        if self._failing and self._errors.recovered is not None:
            self._errors.log.warning("%s", self._errors.recovered)
        self._failing = False
        return self.interval if returned is None else returned
