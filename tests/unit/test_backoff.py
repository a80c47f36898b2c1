"""The one backoff (pgtasks.support.backoff): capped exponential pauses, jitter that only
shortens them, and deadlines, checked on a fake clock (arithmetic, not time)."""

from __future__ import annotations

import math

import pytest

from pgtasks.support.backoff import Backoff, Retry


class FakeClock:
    """A monotonic clock that moves only when a test sleeps on it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def exact(first: float, cap: float, factor: float = 2.0) -> Backoff:
    return Backoff(first, cap, factor, jitter=0.0)


def test_pauses_grow_by_the_factor_up_to_the_cap() -> None:
    pauses = exact(0.1, 1.0).delays()
    assert [round(next(pauses), 6) for _ in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert [exact(1.0, 60.0, factor=3.0).delay(n) for n in (1, 2, 3, 4, 5)] == [1.0, 3.0, 9.0, 27.0, 60.0]
    assert exact(1.0, 60.0, factor=1.0).delay(50) == 1.0  # a factor of 1: a fixed pause


def test_a_huge_retry_number_is_the_cap_not_an_overflow() -> None:
    assert exact(0.05, 2.0).delay(100_000) == 2.0
    assert exact(0.05, 2.0, factor=10.0).delay(10_000) == 2.0


def test_jitter_only_shortens_a_pause_by_up_to_its_share() -> None:
    policy = Backoff(1.0, 8.0, jitter=0.25)
    assert policy.delay(3, rand=lambda: 0.0) == 4.0  # never longer than the exact pause
    assert policy.delay(3, rand=lambda: 0.5) == 3.5
    assert policy.delay(3, rand=lambda: 0.999999) == pytest.approx(3.0)
    drawn = {policy.delay(2) for _ in range(200)}
    assert len(drawn) > 1 and all(1.5 <= d <= 2.0 for d in drawn)  # really random, in range


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"first": -1.0, "cap": 1.0}, "first must be a finite number >= 0, not -1.0"),
        ({"first": 0.1, "cap": math.inf}, "cap must be a finite number >= 0, not inf"),
        ({"first": 0.1, "cap": math.nan}, "cap must be a finite number >= 0, not nan"),
        ({"first": 0.1, "cap": 1.0, "factor": 0.5}, "factor must be a finite number >= 1, not 0.5"),
        ({"first": 0.1, "cap": 1.0, "jitter": 1.5}, "jitter must be between 0 and 1, not 1.5"),
    ],
)
def test_a_bad_policy_is_refused_by_name(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=f"^Backoff {message}$"):
        Backoff(**kwargs)


def test_retries_are_numbered_from_one() -> None:
    with pytest.raises(ValueError, match="retries are numbered from 1, not 0"):
        exact(0.1, 1.0).delay(0)


def test_without_a_deadline_every_failure_gets_a_pause_and_a_success_starts_over() -> None:
    retry = Retry(exact(0.5, 4.0))
    assert [retry.next_delay() for _ in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert retry.failures == 5
    retry.reset()
    assert (retry.failures, retry.next_delay()) == (0, 0.5)


def test_a_pause_that_would_pass_the_deadline_is_not_taken() -> None:
    clock = FakeClock()
    retry = exact(0.25, 10.0).retrying(within=1.0, clock=clock)
    taken = []
    while (pause := retry.next_delay()) is not None:
        taken.append(pause)
        clock.sleep(pause)
    assert taken == [0.25, 0.5]  # then 1.0 would end at 1.75 s, past the deadline at 1.0 s
    assert clock.now == 100.75 and retry.failures == 3


def test_the_last_try_can_be_at_the_deadline() -> None:
    clock = FakeClock()
    retry = exact(0.25, 10.0).retrying(within=1.0, last_try_at_deadline=True, clock=clock)
    taken = []
    while (pause := retry.next_delay()) is not None:
        taken.append(pause)
        clock.sleep(pause)
    assert taken == [0.25, 0.5, 0.25]  # the third pause is cut to end at the deadline
    assert clock.now == 101.0


def test_a_deadline_can_move_while_retrying() -> None:
    clock = FakeClock()
    retry = Retry(exact(1.0, 1.0), deadline=clock() + 10.0, last_try_at_deadline=True, clock=clock)
    assert retry.next_delay() == 1.0
    retry.deadline = clock() + 0.5  # shortened (a worker that stops waits less)
    assert retry.next_delay() == 0.5
    clock.sleep(0.5)
    assert retry.next_delay() is None
