"""Locust producers for pgtasks (or, with ``LOADTEST_BACKEND=celery``, for Celery on Redis).

Three shapes, weighted by ``LOADTEST_MIX`` (``delay:burst:wait``, default ``6:2:2``):
``delay()`` of one task, a burst of 100 tasks in one bulk call, and ``delay()`` then waiting
for the result. Every enqueue is reported to locust as a request (its time and its failure),
so locust's statistics, CSV and HTML show the enqueue rate and latency. The ids of
acknowledged enqueues go to ``LOADTEST_ACK_DIR`` (one file per locust process) for the
invariant check; an enqueue that raised is a failure and is not acknowledged. When the run
stops, the final statistics by request name go to ``locust-final.json`` in the same folder:
locust writes its CSV only once a second, so on a busy machine the CSV of a short run can
predate its requests.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from locust import User, between, events, task
from locust.env import Environment

BACKEND = os.environ.get("LOADTEST_BACKEND", "pgtasks")
BURST = 100
WAIT_TIMEOUT = 60.0
_counter = itertools.count()


def _weights() -> tuple[int, int, int]:
    parts = [int(p) for p in os.environ.get("LOADTEST_MIX", "6:2:2").split(":")]
    if len(parts) != 3 or min(parts) < 0 or sum(parts) == 0:
        raise ValueError("LOADTEST_MIX is delay:burst:wait, three non-negative weights")
    return parts[0], parts[1], parts[2]


class _Acks:
    """Task ids, one line each, appended at once: ``<id> <sent at> sent`` before the enqueue
    (the ids are chosen here) and ``<id> <sent at> ack`` once it returned. A producer that
    locust stops in the middle of a request leaves ids that are sent but not acknowledged:
    such a task may exist, and is not counted as unexpected."""

    def __init__(self) -> None:
        folder = os.environ.get("LOADTEST_ACK_DIR", ".")
        path = os.path.join(folder, f"acked-{BACKEND}-{os.getpid()}.txt")
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, ids: list[str], sent_at: float, what: str) -> None:
        os.write(self._fd, "".join(f"{i} {sent_at:.6f} {what}\n" for i in ids).encode())


class _Backend:
    """What a producer calls, with the ids it chose: ``one``, ``many``, ``one_and_wait``."""

    def __init__(self) -> None:
        if BACKEND == "celery":
            from loadtest.celery_app import app, noop, work

            self.app, self.noop, self.work = app, noop, work
        else:
            from loadtest.app import app, noop, work

            self.app, self.noop, self.work = app, noop, work

    def one(self, ids: list[str], acks: _Acks, sent_at: float) -> None:
        self.work.apply_async((next(_counter),), task_id=ids[0])
        acks.write(ids, sent_at, "ack")

    def many(self, ids: list[str], acks: _Acks, sent_at: float) -> None:
        start = next(_counter)
        if BACKEND == "celery":  # Celery has no bulk insert: one message per task
            for n, task_id in enumerate(ids):
                self.noop.apply_async((start + n,), task_id=task_id)
        else:
            self.noop.map_enqueue([(start + n,) for n in range(len(ids))], task_ids=ids)
        acks.write(ids, sent_at, "ack")

    def one_and_wait(self, ids: list[str], acks: _Acks, sent_at: float) -> None:
        result = self.work.apply_async((next(_counter),), task_id=ids[0])
        acks.write(ids, sent_at, "ack")
        result.get(timeout=WAIT_TIMEOUT)


FINAL_STATS = "locust-final.json"
PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


@events.test_stop.add_listener
def _write_final_stats(environment: Environment, **_: Any) -> None:
    """Every request name's count, failures and percentiles (ms), after the users stopped."""
    entries = [*environment.stats.entries.values(), environment.stats.total]
    final = {
        entry.name: {
            "requests": entry.num_requests,
            "failures": entry.num_failures,
            **{k: entry.get_response_time_percentile(q) or 0 for k, q in PERCENTILES.items()},
        }
        for entry in entries
    }
    path = os.path.join(os.environ.get("LOADTEST_ACK_DIR", "."), FINAL_STATS)
    with open(path, "w") as out:
        json.dump(final, out)


_backend: _Backend | None = None
_acks: _Acks | None = None


class Producer(User):
    """A web app's request handlers sending tasks; no HTTP."""

    wait_time = between(0.001, 0.01)
    delay_weight, burst_weight, wait_weight = _weights()

    def on_start(self) -> None:
        global _backend, _acks
        if _backend is None:
            _backend, _acks = _Backend(), _Acks()

    def _timed(self, name: str, call: Callable[[list[str], _Acks, float], None], count: int) -> None:
        assert _acks is not None
        ids = [str(uuid.uuid4()) for _ in range(count)]
        sent_at = time.time()
        _acks.write(ids, sent_at, "sent")
        start = time.perf_counter()
        exception: Any = None
        try:
            call(ids, _acks, sent_at)
        except Exception as exc:  # reported to locust as a failure; its ids stay unacknowledged
            exception = exc
        self.environment.events.request.fire(
            request_type=BACKEND,
            name=name,
            response_time=(time.perf_counter() - start) * 1000,
            response_length=count,
            exception=exception,
            context={},
        )

    @task(delay_weight)
    def delay(self) -> None:
        self._timed("delay", _backend.one, 1)  # type: ignore[union-attr]

    @task(burst_weight)
    def burst(self) -> None:
        self._timed("burst of 100", _backend.many, BURST)  # type: ignore[union-attr]

    @task(wait_weight)
    def delay_and_wait(self) -> None:
        self._timed("delay and wait", _backend.one_and_wait, 1)  # type: ignore[union-attr]
