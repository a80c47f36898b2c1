"""The one background loop (pgtasks.support.loops): rounds, waits, pokes, stops and the error
policy, on real threads. Synchronised by events with deadlines, never by sleeping: an interval
of an hour proves that a round came from a poke, a returned wait or a stop, not from the clock."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

from pgtasks.support.backoff import Backoff
from pgtasks.support.loops import ErrorPolicy, Loop

HOUR = 3600.0
DEADLINE = 10.0  # seconds any event of these tests may take, on a loaded machine
log = logging.getLogger("pgtasks.test.loops")


class Rounds:
    """A body that counts its rounds, lets a test wait for the n-th, and runs ``script[i]``
    (raise, block, return a wait) in round i."""

    def __init__(self, script: dict[int, Callable[[], float | None]] | None = None) -> None:
        self.count = 0
        self._script = script or {}
        self._changed = threading.Condition()

    def __call__(self) -> float | None:
        with self._changed:
            self.count += 1
            number = self.count
            self._changed.notify_all()
        action = self._script.get(number)
        return None if action is None else action()

    def wait_for(self, n: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.count >= n, DEADLINE), f"round {n} never came"


def policy(**kwargs: object) -> ErrorPolicy:
    return ErrorPolicy(log, "test round failed", **kwargs)  # type: ignore[arg-type]


def raiser(exc: BaseException) -> Callable[[], None]:
    def body() -> None:
        raise exc

    return body


def test_rounds_repeat_every_interval_on_a_thread_named_for_the_loop() -> None:
    names: list[str] = []
    rounds = Rounds({1: lambda: names.append(threading.current_thread().name)})
    loop = Loop("pgtasks-test-rounds", rounds, 0.001, policy())
    loop.start()
    rounds.wait_for(5)
    assert loop.stop(DEADLINE)
    assert names == ["pgtasks-test-rounds"] and not loop.is_alive()


def test_stop_ends_a_long_wait_at_once_and_no_round_follows() -> None:
    rounds = Rounds()
    loop = Loop("pgtasks-test-stop", rounds, HOUR, policy())
    loop.start()
    rounds.wait_for(1)
    assert loop.stop(DEADLINE)  # an hour's wait ended by the stop
    assert rounds.count == 1 and loop.stopping


def test_a_running_round_finishes_before_stop_returns_and_can_see_it() -> None:
    inside, saw_stop = threading.Event(), []

    def long_round() -> None:
        inside.set()
        saw_stop.append(wait_until(lambda: loop.stopping))

    loop = Loop("pgtasks-test-long", Rounds({1: long_round}), HOUR, policy())
    loop.start()
    assert inside.wait(DEADLINE)
    assert loop.stop(DEADLINE)
    assert saw_stop == [True]


def test_poke_runs_the_next_round_now() -> None:
    rounds = Rounds()
    loop = Loop("pgtasks-test-poke", rounds, HOUR, policy())
    loop.start()
    rounds.wait_for(1)
    loop.poke()
    rounds.wait_for(2)
    assert loop.stop(DEADLINE)


def test_a_poke_during_a_round_is_kept_for_the_wait_after_it() -> None:
    inside, release = threading.Event(), threading.Event()

    def blocked() -> None:
        inside.set()
        assert release.wait(DEADLINE)

    rounds = Rounds({1: blocked})
    loop = Loop("pgtasks-test-poke-kept", rounds, HOUR, policy())
    loop.start()
    assert inside.wait(DEADLINE)
    loop.poke()  # while round 1 runs: round 2 must not wait the hour
    release.set()
    rounds.wait_for(2)
    assert loop.stop(DEADLINE)


def test_the_wait_a_round_returns_replaces_the_interval() -> None:
    rounds = Rounds({1: lambda: 0.0, 2: lambda: HOUR})
    loop = Loop("pgtasks-test-returned", rounds, HOUR, policy())
    loop.start()
    rounds.wait_for(2)  # round 1 asked for no wait
    assert loop.stop(DEADLINE)
    assert rounds.count == 2


def test_the_first_round_waits_start_after() -> None:
    rounds = Rounds()
    loop = Loop("pgtasks-test-start-after", rounds, 0.0, policy(), start_after=HOUR)
    loop.start()
    assert loop.is_alive() and rounds.count == 0
    loop.poke()  # ends the first wait like any other
    rounds.wait_for(1)
    assert loop.stop(DEADLINE)
    never = Loop("pgtasks-test-start-after-2", Rounds(), 0.0, policy(), start_after=HOUR)
    never.start()
    assert never.stop(DEADLINE)


def test_stop_before_start_and_from_inside_a_round() -> None:
    assert Loop("pgtasks-test-unstarted", Rounds(), HOUR, policy()).stop()
    ended_inside: list[bool] = []

    def ends_its_loop() -> float:
        ended_inside.append(loop.stop(DEADLINE))  # no join on itself: False, it is still running
        return 0.0

    rounds = Rounds({1: ends_its_loop})
    loop = Loop("pgtasks-test-self-stop", rounds, 0.0, policy())
    loop.start()
    rounds.wait_for(1)
    assert loop.stop(DEADLINE) and rounds.count == 1 and ended_inside == [False]


def test_an_outage_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    down = raiser(ConnectionError("server closed the connection"))
    rounds = Rounds({1: down, 2: down, 3: down, 5: down, 6: lambda: HOUR})
    errors = policy(outage=(ConnectionError,), recovered="test rounds succeed again")
    loop = Loop("pgtasks-test-outage", rounds, 0.0, errors)
    with caplog.at_level(logging.DEBUG, logger=log.name):
        loop.start()
        rounds.wait_for(6)
        assert loop.stop(DEADLINE)
    lines = [(r.levelname, r.getMessage(), r.exc_info is None) for r in caplog.records if r.name == log.name]
    failed = "test round failed: server closed the connection"
    assert lines == [
        ("WARNING", failed, True),
        ("DEBUG", failed, True),
        ("DEBUG", failed, True),
        ("WARNING", "test rounds succeed again", True),
        ("WARNING", failed, True),  # a new outage
        ("WARNING", "test rounds succeed again", True),
    ]


def test_a_bug_is_logged_with_its_traceback_every_time_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bug = raiser(KeyError("missing"))
    rounds = Rounds({1: bug, 2: bug, 3: lambda: HOUR})
    loop = Loop("pgtasks-test-bug", rounds, 0.0, policy(outage=(ConnectionError,)))
    loop.start()
    rounds.wait_for(3)
    assert loop.stop(DEADLINE)
    errors = [r for r in caplog.records if r.name == log.name]
    assert [(r.levelname, r.getMessage()) for r in errors] == [("ERROR", "test round failed")] * 2
    assert all(r.exc_info is not None and r.exc_info[0] is KeyError for r in errors)


def test_stop_on_bug_ends_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    rounds = Rounds({1: raiser(RuntimeError("a statement the database refuses"))})
    loop = Loop("pgtasks-test-stop-on-bug", rounds, 0.0, policy(stop_on_bug=True))
    loop.start()
    loop._thread.join(DEADLINE)
    assert not loop.is_alive() and rounds.count == 1
    assert "test round failed" in caplog.text and "a statement the database refuses" in caplog.text


def test_failing_rounds_wait_by_the_backoff_which_a_success_resets(caplog: pytest.LogCaptureFixture) -> None:
    down = raiser(ConnectionError("refused"))
    rounds = Rounds({1: down, 2: down, 4: down, 5: lambda: HOUR})
    backoff = Backoff(first=1000.0, cap=4000.0, jitter=0.0)
    loop = Loop("pgtasks-test-backoff", rounds, 0.0, policy(outage=(ConnectionError,), backoff=backoff))
    with caplog.at_level(logging.DEBUG, logger=log.name):
        loop.start()
        for logged in (1, 2, 3):  # each failure's pause is long: a poke ends it once it is logged
            assert wait_until(lambda n=logged: len(caplog.records) >= n)  # type: ignore[misc]
            loop.poke()
        rounds.wait_for(5)
        assert loop.stop(DEADLINE)
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == [
        "test round failed, retrying in 1000.0s: refused",
        "test round failed, retrying in 2000.0s: refused",
        "test round failed, retrying in 1000.0s: refused",  # round 3 succeeded: from the first pause
    ]


def test_a_bad_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="loop pgtasks-x: interval must be >= 0 seconds, not -1"):
        Loop("pgtasks-x", Rounds(), -1, policy())


def wait_until(predicate: Callable[[], bool]) -> bool:
    """Poll ``predicate`` (on an event that is never set) for up to DEADLINE seconds."""
    pause = threading.Event()
    for _ in range(int(DEADLINE / 0.005)):
        if predicate():
            return True
        pause.wait(0.005)
    return predicate()
