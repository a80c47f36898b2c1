"""The promise ``AsyncResult.then`` returns (Celery's results are ``vine`` promises).

A promise wraps a function (or nothing); calling the promise fulfils it once: its function
runs with the arguments and the callbacks given to :meth:`Promise.then` run with the
function's value (or with the arguments when there is no function). A callback added after
fulfilment runs at once. When the function or a callback raises, the promise fails and its
``on_error`` callbacks run with the exception instead.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["Promise", "weak_callable"]


def weak_callable(fun: Callable[..., Any]) -> Callable[[], Callable[..., Any] | None]:
    """A reference to ``fun`` that does not keep it (or its object) alive."""
    if hasattr(fun, "__self__") and hasattr(fun, "__func__"):
        return weakref.WeakMethod(fun)
    return weakref.ref(fun)


class Promise:
    """A value that arrives later, with callbacks to run when it does."""

    def __init__(
        self,
        fun: Callable[..., Any] | None = None,
        args: tuple[Any, ...] = (),
        on_error: Callable[[BaseException], Any] | Promise | None = None,
        weak: bool = False,
    ) -> None:
        self._fun: Callable[..., Any] | None = fun
        self._weak_fun = weak_callable(fun) if weak and fun is not None else None
        if self._weak_fun is not None:
            self._fun = None
        self.args = args
        self.on_error = on_error
        self._lock = threading.RLock()
        self._callbacks: list[Promise] = []
        self._settling = False  # called or thrown: it settles once
        self.ready = False
        self.failed = False
        self.cancelled = False
        self.value: tuple[Any, ...] | None = None
        self.reason: BaseException | None = None

    def __repr__(self) -> str:
        state = "failed" if self.failed else "fulfilled" if self.ready else "pending"
        return f"<Promise {state}>"

    @property
    def fun(self) -> Callable[..., Any] | None:
        if self._weak_fun is not None:
            return self._weak_fun()
        return self._fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Fulfil the promise (once; later calls do nothing and return None)."""
        with self._lock:
            if self._settling or self.cancelled:
                return None
            self._settling = True
        fun = self.fun
        try:
            value = fun(*self.args, *args, **kwargs) if fun is not None else None
        except Exception as exc:  # the function's own error goes to on_error, as in vine
            self._fail(exc, origin=True)
            return None
        with self._lock:
            self.value = (value,) if fun is not None else (*self.args, *args)
            self.ready = True
            callbacks, self._callbacks = self._callbacks, []
        _run_all(callbacks, lambda callback: callback(*(self.value or ())))
        return value

    def then(
        self,
        callback: Callable[..., Any] | Promise,
        on_error: Callable[[BaseException], Any] | Promise | None = None,
    ) -> Promise:
        """Run ``callback`` with this promise's value when it is fulfilled (at once when it
        already is); returns the promise of ``callback``'s own value, to chain further."""
        follower = callback if isinstance(callback, Promise) else Promise(callback, on_error=on_error)
        with self._lock:
            if not self.ready:
                self._callbacks.append(follower)
                return follower
        if self.failed:
            follower._inherit(self.reason)
        else:
            follower(*(self.value or ()))
        return follower

    def throw(self, exc: BaseException | None = None) -> None:
        """Fail the promise with ``exc``: its ``on_error`` and its followers' run with it."""
        with self._lock:
            if self._settling or self.cancelled:
                return
            self._settling = True
        self._fail(exc if exc is not None else RuntimeError("promise failed"), origin=True)

    def _inherit(self, exc: BaseException | None) -> None:
        """Fail because the promise this one follows failed (handled or raised there)."""
        with self._lock:
            if self._settling or self.cancelled:
                return
            self._settling = True
        self._fail(exc or RuntimeError("promise failed"), origin=False)

    def cancel(self) -> None:
        """Nothing more runs: not the function, not a callback."""
        with self._lock:
            self.cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback.cancel()

    def _fail(self, exc: BaseException, origin: bool) -> None:
        with self._lock:
            self.failed = self.ready = True
            self.reason = exc
            callbacks, self._callbacks = self._callbacks, []
        if self.on_error is not None:
            self.on_error(exc)
        _run_all(callbacks, lambda callback: callback._inherit(exc))
        if origin and self.on_error is None and not callbacks:
            raise exc  # nobody handles it: the caller sees it, as with vine


def _run_all(callbacks: list[Promise], run: Callable[[Promise], Any]) -> None:
    """``run`` each callback; one that raises does not stop the others (the first error is
    raised once all ran)."""
    first: Exception | None = None
    for callback in callbacks:
        try:
            run(callback)
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first
