"""The one backoff of pgtasks: capped exponential pauses with jitter, and a deadline.

:class:`Backoff` is the policy (frozen, shared as a module constant): ``first`` seconds before
the first retry, ``factor`` times longer before each next one, never longer than ``cap``. Its
``jitter`` takes a random share (up to that fraction) off each pause, so that workers that lost
their database together do not come back in step; jitter only ever shortens a pause, so a
bound reasoned without it still holds.

:class:`Retry` is one run of retries under that policy (one call, one outage): it counts
failures, gives the pause before the next try, and says when a deadline leaves no room for one.
Every retry loop reads the same way::

    retry = POLICY.retrying(within=30.0)
    while True:
        try:
            return call()
        except Unavailable:
            pause = retry.next_delay()
            if pause is None:
                raise
            time.sleep(pause)
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Clock = Callable[[], float]  # seconds, monotonic
Random = Callable[[], float]  # uniform in [0, 1)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Pauses of ``first``, ``first * factor``, ``first * factor**2``, ... seconds, each at most
    ``cap``, each shortened at random by up to ``jitter`` of itself (0 for exact pauses)."""

    first: float
    cap: float
    factor: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        for name, low in (("first", 0.0), ("cap", 0.0), ("factor", 1.0)):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= low):
                raise ValueError(f"Backoff {name} must be a finite number >= {low:g}, not {value!r}")
        if not (isinstance(self.jitter, (int, float)) and 0.0 <= self.jitter <= 1.0):
            raise ValueError(f"Backoff jitter must be between 0 and 1, not {self.jitter!r}")

    def delay(self, retry: int, rand: Random = random.random) -> float:
        """The pause before retry number ``retry`` (1 for the first)."""
        if retry < 1:
            raise ValueError(f"retries are numbered from 1, not {retry!r}")
        try:
            base = min(self.cap, self.first * self.factor ** (retry - 1))
        except OverflowError:  # factor ** retry past the largest float: long since capped
            base = self.cap
        return base * (1.0 - self.jitter * rand()) if self.jitter else float(base)

    def delays(self, rand: Random = random.random) -> Iterator[float]:
        """The pauses before retry 1, 2, 3, ... without end."""
        retry = 0
        while True:
            retry += 1
            yield self.delay(retry, rand)

    def retrying(
        self,
        within: float | None = None,
        *,
        last_try_at_deadline: bool = False,
        clock: Clock = time.monotonic,
        rand: Random = random.random,
    ) -> Retry:
        """A fresh run of retries that ends ``within`` seconds from now (None: never); see
        :class:`Retry` for ``last_try_at_deadline``."""
        deadline = None if within is None else clock() + within
        return Retry(self, deadline, last_try_at_deadline=last_try_at_deadline, clock=clock, rand=rand)


class Retry:
    """The retries of one call or one outage under ``policy``.

    ``deadline`` (on ``clock``'s time line; None for none) may be moved while the run goes on.
    By default a pause that would end after it is not taken (:meth:`next_delay` says None: give
    up now); with ``last_try_at_deadline`` the pause is cut short instead, for one last try at
    the deadline, and None comes once the deadline has passed.
    """

    __slots__ = ("_clock", "_last_try", "_rand", "deadline", "failures", "policy")

    def __init__(
        self,
        policy: Backoff,
        deadline: float | None = None,
        *,
        last_try_at_deadline: bool = False,
        clock: Clock = time.monotonic,
        rand: Random = random.random,
    ) -> None:
        self.policy = policy
        self.deadline = deadline
        self.failures = 0  # failed tries so far in this run
        self._last_try = last_try_at_deadline
        self._clock = clock
        self._rand = rand

    def next_delay(self) -> float | None:
        """Count one more failed try; the pause before the next, or None when the deadline
        leaves no room for another try."""
        self.failures += 1
        pause = self.policy.delay(self.failures, self._rand)
        if self.deadline is None:
            return pause
        left = self.deadline - self._clock()
        if self._last_try:
            return None if left <= 0 else min(pause, left)
        return None if pause > left else pause

    def reset(self) -> None:
        """A try succeeded: the next failure starts again from the first pause."""
        self.failures = 0
