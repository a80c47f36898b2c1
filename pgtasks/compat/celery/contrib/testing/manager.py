"""Celery's ``celery.contrib.testing.manager``: the helpers of Celery's own integration tests
(wait for something with growing pauses, make sure something does not happen, join results
reporting what is missing, ask the workers which tasks they hold).

The workers' answers come from the database (``app.control.inspect``): a task a worker has
claimed is ``active`` there; one that finished is no longer held by any worker (its state is
in the result). A lost connection is pgtasks' :class:`DatabaseUnavailable`.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import count
from typing import Any, TextIO

from pgtasks.compat.bridge.retry_over_time import retry_over_time
from pgtasks.compat.celery import states
from pgtasks.compat.celery.exceptions import TimeoutError
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.result.result_set import ResultSet
from pgtasks.compat.celery.utils.text import truncate
from pgtasks.compat.celery.utils.time import humanize_seconds
from pgtasks.engine.errors import DatabaseUnavailable

__all__ = ["Manager", "ManagerMixin", "Sentinel", "retry_over_time"]

STILL_WAITING = "Still waiting for {0}.  Trying again {when}: {exc!r}"


class Sentinel(Exception):
    """Signifies the end of something (what ``true_or_raise`` raises for a false value)."""


class ManagerMixin:
    """What :class:`Manager` can do, for a class that has ``app``."""

    app: Any

    def _init_manager(
        self,
        block_timeout: float = 30 * 60.0,
        no_join: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.stdout = sys.stdout if stdout is None else stdout
        self.stderr = sys.stderr if stderr is None else stderr
        self.connerrors: tuple[type[BaseException], ...] = (DatabaseUnavailable,)
        self.block_timeout = block_timeout
        self.no_join = no_join

    def remark(self, s: str, sep: str = "-") -> None:
        """Print ``s`` after ``sep`` to the manager's stdout."""
        print(f"{sep}{s}", file=self.stdout)

    def missing_results(self, r: Sequence[AsyncResult]) -> list[str]:
        """The ids of the results in ``r`` that are not ready yet."""
        return [res.id for res in r if not res.ready()]

    def wait_for(
        self,
        fun: Callable[..., Any],
        catch: Sequence[type[BaseException]],
        desc: str = "thing",
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        errback: Callable[[BaseException, float, int], Any] | None = None,
        max_retries: int = 10,
        interval_start: float = 0.1,
        interval_step: float = 0.5,
        interval_max: float = 5.0,
        emit_warning: bool = False,
        **options: Any,
    ) -> Any:
        """Call ``fun`` until it stops raising one of ``catch`` (see :func:`retry_over_time`);
        return its value. ``emit_warning`` prints each retry to the manager's stderr."""

        def on_error(exc: BaseException, pauses: Iterator[float], retries: int) -> float:
            interval = next(pauses)
            if emit_warning:
                when = humanize_seconds(interval, "in", " ", microseconds=True)
                print(STILL_WAITING.format(desc, when=when, exc=exc), file=self.stderr)
            if errback is not None:
                errback(exc, interval, retries)
            return interval

        return self.retry_over_time(
            fun,
            catch,
            args=args,
            kwargs=kwargs or {},
            errback=on_error,
            max_retries=max_retries,
            interval_start=interval_start,
            interval_step=interval_step,
            interval_max=interval_max,
            **options,
        )

    def ensure_not_for_a_while(
        self,
        fun: Callable[..., Any],
        catch: Sequence[type[BaseException]],
        desc: str = "thing",
        max_retries: int = 20,
        interval_start: float = 0.1,
        interval_step: float = 0.02,
        interval_max: float = 1.0,
        emit_warning: bool = False,
        **options: Any,
    ) -> None:
        """Make sure ``fun`` keeps raising one of ``catch`` for a while: AssertionError if it
        returns within the retries."""
        try:
            self.wait_for(
                fun,
                catch,
                desc=desc,
                max_retries=max_retries,
                interval_start=interval_start,
                interval_step=interval_step,
                interval_max=interval_max,
                emit_warning=emit_warning,
                **options,
            )
        except tuple(catch):
            return
        raise AssertionError(f"Should not have happened: {desc}")

    def retry_over_time(self, *args: Any, **kwargs: Any) -> Any:
        return retry_over_time(*args, **kwargs)

    def join(self, r: Any, propagate: bool = False, max_retries: int = 10, **kwargs: Any) -> Any:
        """``r.get()`` (a result or a result set), retried ``max_retries`` times on a timeout
        or a lost connection, remarking which results are still missing; AssertionError after."""
        if self.no_join:
            return None
        if not isinstance(r, ResultSet):
            r = self.app.ResultSet([r])
        received: list[str] = []

        def on_result(task_id: str, value: Any) -> None:
            received.append(task_id)

        for attempt in count(0):
            if attempt > max_retries:
                break
            try:
                return r.get(callback=on_result, propagate=propagate, **kwargs)
            except TimeoutError as exc:
                waiting_for = self.missing_results(r)
                self.remark(
                    f"Still waiting for {len(waiting_for)}/{len(r)}: "
                    f"[{truncate(', '.join(waiting_for))}]: {exc!r}",
                    "!",
                )
            except self.connerrors as exc:
                self.remark(f"join: connection lost: {exc!r}", "!")
        raise AssertionError("Test failed: Missing task results")

    def inspect(self, timeout: float = 3.0) -> Any:
        return self.app.control.inspect(timeout=timeout)

    def query_tasks(self, ids: Sequence[str], timeout: float = 0.5) -> Iterator[tuple[str, Any]]:
        """``(worker, {id: [state, info]})`` for each worker holding some of ``ids``."""
        tasks = self.inspect(timeout).query_task(*ids) or {}
        yield from tasks.items()

    def query_task_states(self, ids: Sequence[str], timeout: float = 0.5) -> dict[str, set[str]]:
        """``{state: {ids}}`` as the workers report them (``active``, ``reserved``)."""
        found: dict[str, set[str]] = defaultdict(set)
        for _, reply in self.query_tasks(ids, timeout=timeout):
            for task_id, (state, _) in reply.items():
                found[state].add(task_id)
        return found

    def assert_accepted(
        self,
        ids: Sequence[str],
        interval: float = 0.5,
        desc: str = "waiting for tasks to be accepted",
        **policy: Any,
    ) -> Any:
        """Wait until a worker runs every task of ``ids``."""
        return self.assert_task_worker_state(self.is_accepted, ids, interval=interval, desc=desc, **policy)

    def assert_received(
        self,
        ids: Sequence[str],
        interval: float = 0.5,
        desc: str = "waiting for tasks to be received",
        **policy: Any,
    ) -> Any:
        """Wait until workers hold every task of ``ids`` (running or reserved)."""
        return self.assert_task_worker_state(self.is_received, ids, interval=interval, desc=desc, **policy)

    def assert_result_tasks_in_progress_or_completed(
        self,
        async_results: Sequence[AsyncResult],
        interval: float = 0.5,
        desc: str = "waiting for tasks to be started or completed",
        **policy: Any,
    ) -> Any:
        """Wait until every result reads STARTED or SUCCESS."""
        return self.assert_task_state_from_result(
            self.is_result_task_in_progress, async_results, interval=interval, desc=desc, **policy
        )

    def assert_task_state_from_result(
        self, fun: Callable[..., Any], results: Sequence[AsyncResult], interval: float = 0.5, **policy: Any
    ) -> Any:
        return self.wait_for(
            partial(self.true_or_raise, fun, results, timeout=interval), (Sentinel,), **policy
        )

    @staticmethod
    def is_result_task_in_progress(results: Sequence[AsyncResult], **kwargs: Any) -> bool:
        return all(result.state in (states.STARTED, states.SUCCESS) for result in results)

    def assert_task_worker_state(
        self, fun: Callable[..., Any], ids: Sequence[str], interval: float = 0.5, **policy: Any
    ) -> Any:
        return self.wait_for(partial(self.true_or_raise, fun, ids, timeout=interval), (Sentinel,), **policy)

    def is_received(self, ids: Sequence[str], **kwargs: Any) -> bool:
        return self._ids_matches_state(["reserved", "active", "ready"], ids, **kwargs)

    def is_accepted(self, ids: Sequence[str], **kwargs: Any) -> bool:
        return self._ids_matches_state(["active", "ready"], ids, **kwargs)

    def _ids_matches_state(
        self, expected_states: Sequence[str], ids: Sequence[str], timeout: float = 0.5
    ) -> bool:
        found = self.query_task_states(ids, timeout=timeout)
        return all(any(t in found[state] for state in expected_states) for t in ids)

    def true_or_raise(self, fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fun(...)``'s value, or :class:`Sentinel` raised when it is false."""
        res = fun(*args, **kwargs)
        if not res:
            raise Sentinel()
        return res

    def wait_until_idle(self) -> None:
        """Purge the waiting tasks (until none is left), then wait until no worker runs any."""
        control = self.app.control
        while control.purge():
            pass
        inspect = control.inspect()
        while sum(len(tasks) for tasks in (inspect.active() or {}).values()):
            time.sleep(0.1)


class Manager(ManagerMixin):
    """Test helpers for task integration tests (``Manager(app)``)."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        self.app = app
        self._init_manager(**kwargs)
