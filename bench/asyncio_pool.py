"""The asyncio pool (issue 15): 10,000 tasks that each ``await asyncio.sleep(1)`` drained by one
``-P asyncio -c 5000`` worker; no-op and three-step drain rates of async tasks on that pool
beside sync ones on the threads pool; and how long ``await result.get_async()`` and
``result.get()`` take to see a task finish.

    python -m bench.asyncio_pool [--sleepers 10000] [--concurrency 5000] [--runs 3]

PostgreSQL is a throwaway server started here with fsync on (or PGTASKS_DATABASE_URL). Each
figure is the median of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable

from bench import server_state
from bench.throughput import drain, median_of, start_worker, stop, unfinished
from pgtasks import Client
from pgtasks.engine.options import SendOptions
from tests.support.pgserver import PostgresServer


def sleepers(url: str, count: int, concurrency: int) -> tuple[float, float]:
    """Queue ``count`` one-second sleepers, start one asyncio worker and wait for all. Returns
    (seconds from the first start to the last completion, by the database's timestamps;
    seconds from starting the worker process to the last completion, by this clock)."""
    server_state.settle(url)
    client = Client(url)
    client.engine.enqueue(
        [SendOptions(queue="bench").request("bench.async_sleep", [1]) for _ in range(count)]
    )
    started = time.monotonic()
    worker = start_worker(url, concurrency, "asyncio")
    try:
        deadline = started + 300
        while unfinished(client):  # the queue's counts: cheap at any history
            if time.monotonic() > deadline:
                raise TimeoutError("the sleepers did not drain")
            time.sleep(0.02)
        wall = time.monotonic() - started
        rows = client.list_tasks(name="bench.async_sleep", limit=count)
        assert len(rows) == count and all(r.status.value == "SUCCESS" for r in rows), "a sleeper failed"
        first = min(r.started_at_epoch_ms or 0 for r in rows)
        last = max(r.updated_at for r in rows)
        return (last - first) / 1000, wall
    finally:
        stop(worker)
        client.close()
        server_state.drop_schema(url)


def wait_latency(url: str, count: int) -> tuple[float, float, float, float]:
    """p50 and p99, in ms, from sending a no-op to its result in hand: (get_async p50, p99,
    get p50, p99), one task at a time against an idle threads worker."""
    server_state.settle(url)
    client = Client(url)
    worker = start_worker(url, 8, "threads")
    try:
        client.AsyncResult(client.enqueue("bench.noop", queue="bench").id).get(timeout=60)  # warm

        async def awaited() -> list[float]:
            took = []
            for _ in range(count):
                t = time.perf_counter()
                handle = await client.enqueue_async("bench.noop", queue="bench")
                await handle.get_async(timeout=60)
                took.append((time.perf_counter() - t) * 1000)
            return took

        async_ms = sorted(asyncio.run(awaited()))
        sync_ms = []
        for _ in range(count):
            t = time.perf_counter()
            client.enqueue("bench.noop", queue="bench").get(timeout=60)
            sync_ms.append((time.perf_counter() - t) * 1000)
        sync_ms.sort()
        p99 = int(count * 0.99) - 1
        return statistics.median(async_ms), async_ms[p99], statistics.median(sync_ms), sync_ms[p99]
    finally:
        stop(worker)
        client.close()
        server_state.drop_schema(url)


def drain_rates(
    at: Callable[[str], str], args: argparse.Namespace, pool: str, concurrency: int, names: tuple[str, str]
) -> tuple[float, float]:
    """Median drain rates (tasks/s) of the no-op task and the three-step task ``names``."""
    noop, steps = names
    (rate,) = median_of(args.runs, lambda _: drain(at("bench_noop"), noop, args.tasks, concurrency, pool))
    (stepped,) = median_of(
        args.runs, lambda _: drain(at("bench_steps"), steps, args.tasks // 5, concurrency, pool)
    )
    return rate, stepped


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sleepers", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=20000, help="tasks per no-op drain")
    parser.add_argument("--waits", type=int, default=300, help="tasks per latency run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    server = None
    url = os.environ.get("PGTASKS_DATABASE_URL", "")
    if not url.startswith("postgres"):
        server = PostgresServer(fsync=True).start()
        url = server.url

    def at(schema: str) -> str:
        return f"{url}?schema={schema}_{time.time_ns()}"

    try:
        span, wall = median_of(
            args.runs, lambda _: sleepers(at("bench_sleep"), args.sleepers, args.concurrency)
        )
        print(
            f"{args.sleepers:,} x await asyncio.sleep(1), -P asyncio -c {args.concurrency}: "
            f"{span:.2f} s first start to last end, {wall:.2f} s from the worker's start",
            flush=True,
        )
        print("drain, tasks/s | no-op | 3 steps", flush=True)
        for label, pool, concurrency, names in (
            ("async, -P asyncio -c 500", "asyncio", 500, ("bench.async_noop", "bench.async_three_steps")),
            ("sync, -P threads -c 8", "threads", 8, ("bench.noop", "bench.three_steps")),
        ):
            rates = drain_rates(at, args, pool, concurrency, names)
            print(f"{label} | {rates[0]:,.0f} | {rates[1]:,.0f}", flush=True)
        a50, a99, s50, s99 = median_of(args.runs, lambda _: wait_latency(at("bench_wait"), args.waits))
        print(
            f"send + wait for a no-op, ms: get_async p50 {a50:.1f} p99 {a99:.1f}; "
            f"get p50 {s50:.1f} p99 {s99:.1f}"
        )
    finally:
        if server:
            server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
