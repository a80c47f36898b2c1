"""Enqueue and drain throughput, and enqueue-to-start latency, of pgtasks on PostgreSQL and
SQLite with one worker process.

    python -m bench.throughput [--tasks 5000] [--concurrency 8] [--dialect postgres,sqlite]

PostgreSQL is a throwaway server started here with fsync on (or PGTASKS_DATABASE_URL).
Prints enqueue rate (single delay() calls and one bulk call) and drain rate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pgtasks import Client
from pgtasks.engine.options import EnqueueRequest
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]


def start_worker(url: str, concurrency: int, pool: str) -> subprocess.Popen[bytes]:
    """One `pgtasks worker` process for the bench app's queue."""
    argv = [
        sys.executable,
        "-m",
        "pgtasks",
        "worker",
        "-A",
        "bench.noop_app",
        "-Q",
        "bench",
        "-c",
        str(concurrency),
        "-P",
        pool,
        "-n",
        f"bench-{time.time_ns()}",
        "-l",
        "WARNING",
    ]
    env = {**os.environ, "PGTASKS_DATABASE_URL": url}
    return subprocess.Popen(argv, cwd=REPO, env=env, stderr=subprocess.DEVNULL)


def drain(url: str, name: str, count: int, concurrency: int, pool: str = "threads") -> float:
    """Queue ``count`` tasks, start one worker, wait for all; return tasks/s measured from the
    database's own timestamps (first start to last completion)."""
    client = Client(url)
    handles = client.engine.enqueue([EnqueueRequest(name=name, queue="bench") for _ in range(count)])
    worker = start_worker(url, concurrency, pool)
    try:
        for task_id in (handles[-1], *handles):
            client.AsyncResult(task_id).get(timeout=600)
        rows = client.list_tasks(name=name, limit=count)
        first = min(r.started_at_epoch_ms or 0 for r in rows)
        last = max(r.updated_at for r in rows)
        return count / max((last - first) / 1000, 1e-3)
    finally:
        worker.terminate()
        worker.wait(30)
        client.close()


def start_latency(url: str, rate: float, seconds: float, concurrency: int) -> tuple[float, float]:
    """Offer ``rate`` single delay() calls per second for ``seconds`` to one idle worker; return
    p50 and p99 of enqueue-to-start in ms, from the database's own timestamps."""
    client = Client(url)
    worker = start_worker(url, concurrency, "threads")
    try:
        client.AsyncResult(client.enqueue("bench.noop", queue="bench").id).get(timeout=60)  # warm
        ids = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            pause = start + i / rate - time.perf_counter()  # pacing the offered load
            if pause > 0:
                time.sleep(pause)
            ids.append(client.enqueue("bench.noop", queue="bench").id)
        for task_id in ids:
            client.AsyncResult(task_id).get(timeout=60)
        records = [client.engine.get_task(task_id) for task_id in ids]
        waits = sorted(r.started_at_epoch_ms - r.created_at for r in records if r and r.started_at_epoch_ms)
        return statistics.median(waits), waits[int(len(waits) * 0.99) - 1]
    finally:
        worker.terminate()
        worker.wait(30)
        client.close()


def enqueue_rates(url: str, count: int) -> tuple[float, float]:
    client = Client(url)
    t = time.perf_counter()
    for _ in range(count):
        client.enqueue("bench.noop", queue="elsewhere")
    single = count / (time.perf_counter() - t)
    t = time.perf_counter()
    client.engine.enqueue([EnqueueRequest(name="bench.noop", queue="elsewhere") for _ in range(count)])
    bulk = count / (time.perf_counter() - t)
    client.close()
    return single, bulk


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--dialect", default="postgres,sqlite")
    parser.add_argument("--rate", type=float, default=200.0, help="offered load for the latency run")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the latency run")
    args = parser.parse_args()
    server = None
    print(
        f"{'database':10} {'delay()/s':>10} {'bulk/s':>10} {'drain noop/s':>13} {'drain 3-step/s':>15} "
        f"{'start p50 ms':>13} {'start p99 ms':>13}"
    )
    for dialect in args.dialect.split(","):
        if dialect == "postgres":
            url = os.environ.get("PGTASKS_DATABASE_URL", "")
            if not url.startswith("postgres"):
                server = PostgresServer(fsync=True).start()
                url = server.url

            def at(schema: str, base: str = url) -> str:
                return f"{base}?schema={schema}"
        else:
            folder = tempfile.mkdtemp()

            def at(schema: str, folder: str = folder) -> str:
                return f"sqlite:///{folder}/{schema}.sqlite3"

        single, bulk = enqueue_rates(at("bench_enqueue"), args.tasks)
        noop = drain(at("bench_noop"), "bench.noop", args.tasks, args.concurrency)
        steps = drain(at("bench_steps"), "bench.three_steps", args.tasks // 5, args.concurrency)
        p50, p99 = start_latency(at("bench_latency"), args.rate, args.seconds, args.concurrency)
        print(
            f"{dialect:10} {single:10.0f} {bulk:10.0f} {noop:13.0f} {steps:15.0f} {p50:13.1f} {p99:13.1f}",
            flush=True,
        )
    if server:
        server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
