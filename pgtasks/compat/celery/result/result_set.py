"""Celery's ``celery.result.ResultSet``: several results handled together."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery._state import get_current_app
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.result.base import ResultBase, picklable_class
from pgtasks.compat.celery.result.promise import Promise
from pgtasks.engine.lookups import wait_timeout

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["ResultSet"]


class ResultSet(ResultBase):
    """Several results handled together: ``ready``, ``completed_count``, ``join``."""

    supports_native_join = True
    _watching = False  # then() has hooked the members' promises

    def __init__(self, results: Any, app: Celery | None = None, **kwargs: Any) -> None:
        self.results: list[AsyncResult] = list(results or [])
        self.app = app if app is not None else getattr(type(self), "app", None)  # app.ResultSet's

    # Equal by members, which change: no __hash__, so unhashable, as Celery's.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResultSet):
            return other.results == self.results
        return NotImplemented

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: [{', '.join(r.id for r in self.results)}]>"

    def __reduce__(self) -> tuple[Any, ...]:
        return picklable_class(type(self)), (self.results,)

    def __iter__(self) -> Any:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> AsyncResult:
        return self.results[index]

    def add(self, result: AsyncResult) -> None:
        if result not in self.results:
            self.results.append(result)

    def ready(self) -> bool:
        return all(r.ready() for r in self.results)

    def successful(self) -> bool:
        return all(r.successful() for r in self.results)

    def failed(self) -> bool:
        return any(r.failed() for r in self.results)

    def waiting(self) -> bool:
        return not self.ready()

    def completed_count(self) -> int:
        return sum(1 for r in self.results if r.successful())

    def join(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        callback: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> list[Any]:
        """Every result, in order; ``timeout`` is for the whole set, as in Celery (a number
        of seconds, its string, or None; anything else, NaN too, is refused naming it)."""
        seconds = wait_timeout(timeout, text=True)
        deadline = None if seconds is None else time.monotonic() + seconds
        values = []
        for result in self.results:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            # A member's own outcome, not its parents' (as Celery's native join reads them).
            value = result.get(
                timeout=left,
                propagate=propagate,
                interval=interval,
                disable_sync_subtasks=disable_sync_subtasks,
                follow_parents=False,
            )
            if callback is not None:
                callback(result.id, value)  # instead of collecting it, as Celery's join
            else:
                values.append(value)
        return values

    def get(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        callback: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> list[Any] | None:
        """Celery's ``get``: :meth:`join_native`, the database being the native backend (so
        with a ``callback``, which gets each value, it returns None)."""
        values = self.join(timeout, propagate, interval, callback, disable_sync_subtasks, **kwargs)
        return None if callback is not None else values

    async def join_async(
        self, timeout: float | None = None, propagate: bool = True, callback: Any = None, **kwargs: Any
    ) -> list[Any]:
        """:meth:`join` for async code: every result, in order, awaited with get_async."""
        seconds = wait_timeout(timeout, text=True)
        deadline = None if seconds is None else time.monotonic() + seconds
        values = []
        for result in self.results:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            value = await result.get_async(timeout=left, propagate=propagate)
            if callback is not None:
                callback(result.id, value)
            else:
                values.append(value)
        return values

    get_async = join_async

    def revoke(self, connection: Any = None, terminate: bool = False, **kwargs: Any) -> None:
        for result in self.results:
            result.revoke(terminate=terminate)

    @property
    def children(self) -> list[AsyncResult]:
        return self.results

    @property
    def backend(self) -> Any:
        return (self.app or get_current_app()).backend

    def update(self, results: Iterable[AsyncResult]) -> None:
        """Add each of ``results`` not in the set yet."""
        self.results.extend(r for r in results if r not in self.results)

    def remove(self, result: AsyncResult | str) -> None:
        """Remove ``result`` (or the result with that id); KeyError if it is not in the set."""
        found = self._find(result)
        if found is None:
            raise KeyError(result)
        self.results.remove(found)

    def discard(self, result: AsyncResult | str) -> None:
        """Remove ``result`` if it is in the set."""
        found = self._find(result)
        if found is not None:
            self.results.remove(found)

    def clear(self) -> None:
        self.results.clear()

    def _find(self, result: AsyncResult | str) -> AsyncResult | None:
        wanted = result if isinstance(result, str) else result.id
        return next((r for r in self.results if r.id == wanted), None)

    def forget(self) -> None:
        """Delete every member's stored result now."""
        for result in self.results:
            result.forget()

    def maybe_throw(self, callback: Callable[[str, Any], Any] | None = None, propagate: bool = True) -> None:
        for result in self.results:
            result.maybe_throw(callback=callback, propagate=propagate)

    maybe_reraise = maybe_throw

    def join_native(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        callback: Callable[[str, Any], Any] | None = None,
        no_ack: bool = True,
        on_message: Any = None,
        on_interval: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> list[Any] | None:
        """:meth:`join`: the database is the backend, there is no other native way. With a
        ``callback`` it returns None, as Celery's ``join_native``."""
        values = self.join(timeout=timeout, propagate=propagate, interval=interval, callback=callback)
        return None if callback is not None else values

    def iter_native(
        self, timeout: float | None = None, interval: float = 0.5, **kwargs: Any
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(task id, meta)`` for each member once it is ready, in order; ``meta`` as Celery's
        backends give it (``status``, ``result``, ``traceback``, ``task_id``, ``children``)."""
        for result in self.results:
            result.get(timeout=timeout, propagate=False, interval=interval)
            yield (
                result.id,
                {
                    "task_id": result.id,
                    "status": result.state,
                    "result": result.result,
                    "traceback": result.traceback,
                    "children": result.children or [],
                },
            )

    def then(self, callback: Any, on_error: Any = None, weak: bool = False) -> Promise:
        """Call ``callback(result_set)`` once every member is ready, on the thread that saw
        the last one finish (see :meth:`AsyncResult.then`); ``on_error(exc)`` gets what
        ``callback`` raised. The members present now are the ones waited for."""
        follower = self.on_ready.then(callback, on_error)
        if not self._watching:
            self._watching = True
            members = list(self.results)
            left = [len(members)]
            lock = threading.Lock()

            def one_ready(_: Any) -> None:
                with lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:
                    self.on_ready(self)

            if not members:
                self.on_ready(self)
            for member in members:
                member.then(one_ready, weak=weak)
        return follower
