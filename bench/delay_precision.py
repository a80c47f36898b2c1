"""How late delayed work starts on an idle worker (one in-process worker, threads -c 4):

- countdown: tasks sent one at a time with countdowns of 0.3 to 1.2 s; lateness = start
  minus the due time;
- retry: a task that retries itself with ``countdown=0.3``; lateness = the gap between two
  runs minus 0.3 s;
- refill: tasks of a queue with a global concurrency of 1; latency = the start of a task
  minus the end of the one before it (the freed slot's refill).

The worker has a lease of 240 s and a poll of 60 s, so neither a heartbeat round nor a poll
is in these figures. Uses ``PGTASKS_TEST_DATABASE_URL`` when set, else starts a server.

    python -m bench.delay_precision        (make bench-delays)
"""

from __future__ import annotations

import itertools
import os
import statistics
import threading
import time

import pgtasks
from pgtasks import App
from tests.support.inprocess import running_worker, wait_for
from tests.support.pgserver import PostgresServer
from tests.support.schemas import drop_schema, new_schema_name, with_schema

ROUNDS = int(os.environ.get("DELAY_BENCH_ROUNDS", "40"))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(label: str, values_s: list[float]) -> None:
    ms = [v * 1000 for v in values_s]
    print(
        f"{label:<10} n={len(ms):<4} p50={statistics.median(ms):7.1f} ms  p99={pct(ms, 0.99):7.1f} ms  "
        f"max={max(ms):7.1f} ms"
    )


def measure(url: str) -> None:
    app = App("delaybench", database_url=url, poll_interval=60, lease_seconds=240)
    app.queue("one", concurrency=1)
    starts: dict[str, float] = {}
    runs: list[float] = []
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()

    @app.task
    def stamp(key: str) -> None:
        starts[key] = time.time()

    @app.task
    def again(times: int) -> int:
        runs.append(time.time())
        if len(runs) < times:
            raise pgtasks.RetryRequested(countdown=0.3, reason=ConnectionError("again"))
        return len(runs)

    @app.task(queue="one")
    def single() -> None:
        begun = time.time()
        time.sleep(0.005)
        with lock:
            spans.append((begun, time.time()))

    with running_worker(app, queues=("default", "one")) as worker:
        wait_for(lambda: worker._wakeups is not None and worker._wakeups.listening.is_set())
        late = []
        for i in range(ROUNDS):
            countdown = 0.3 + (i % 10) * 0.1
            due = time.time() + countdown
            stamp.apply_async((str(i),), countdown=countdown).get(timeout=60)
            late.append(starts[str(i)] - due)
        report("countdown", late)

        again.delay(ROUNDS // 2 + 1).get(timeout=120)
        report("retry", [b - a - 0.3 for a, b in itertools.pairwise(runs)])

        handles = [single.delay() for _ in range(ROUNDS)]
        for handle in handles:
            handle.get(timeout=60)
        spans.sort()
        report("refill", [b[0] - a[1] for a, b in itertools.pairwise(spans)])
    app.close()


def main() -> int:
    server_url = os.environ.get("PGTASKS_TEST_DATABASE_URL")
    server = None
    if not server_url:
        server = PostgresServer(fsync=True).start()
        server_url = server.url
    schema = new_schema_name("delaybench_")
    try:
        measure(with_schema(server_url, schema))
    finally:
        drop_schema(server_url, schema)
        if server is not None:
            server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
