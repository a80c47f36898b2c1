"""The promise ``AsyncResult.then`` returns: fulfilled once, callbacks before and after,
chaining, errors to ``on_error`` (or to the caller when nobody handles them), weak
functions, cancel."""

from __future__ import annotations

import gc

import pytest

from pgtasks.compat.celery.result.promise import Promise


def test_callbacks_run_once_with_the_value_before_or_after_fulfilment() -> None:
    seen: list[object] = []
    ready = Promise()
    doubled = ready.then(lambda x: x * 2)
    doubled.then(seen.append)
    assert not ready.ready and seen == []
    ready(21)
    ready(99)  # settled: later calls do nothing
    assert ready.value == (21,) and doubled.value == (42,) and seen == [42]
    ready.then(seen.append)  # added after: runs at once
    assert seen == [42, 21]
    assert Promise(lambda a, b: a + b, args=(1,))(2) == 3


def test_a_callback_that_raises_goes_to_on_error_and_does_not_stop_the_others() -> None:
    errors: list[BaseException] = []
    seen: list[object] = []
    ready = Promise()
    failing = ready.then(lambda _: 1 / 0, on_error=errors.append)
    after = failing.then(seen.append)
    ready.then(seen.append)
    ready("v")
    assert isinstance(errors[0], ZeroDivisionError) and failing.failed and after.failed
    assert isinstance(after.reason, ZeroDivisionError) and seen == ["v"]
    assert failing.then(seen.append).failed  # a follower of a failed promise fails at once

    unhandled = Promise()
    unhandled.then(lambda _: 1 / 0)
    with pytest.raises(ZeroDivisionError):  # nobody handles it: the caller sees it
        unhandled("x")


def test_throw_cancel_and_weak_functions() -> None:
    errors: list[BaseException] = []
    thrown = Promise(on_error=errors.append)
    thrown.throw(KeyError("k"))
    assert thrown.failed and isinstance(errors[0], KeyError)

    seen: list[object] = []
    cancelled = Promise()
    cancelled.then(seen.append)
    cancelled.cancel()
    assert cancelled("x") is None and seen == []

    class Holder:
        def method(self, value: object) -> None:
            seen.append(value)

    holder = Holder()
    weak = Promise(holder.method, weak=True)
    del holder
    gc.collect()
    weak("dropped")  # its object is gone: nothing runs
    assert seen == [] and weak.ready
