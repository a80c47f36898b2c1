"""Enqueue and drain throughput of pgtasks on PostgreSQL and SQLite, one worker process.

    python -m bench.throughput [--tasks 5000] [--concurrency 8] [--dialect postgres,sqlite]

PostgreSQL is a throwaway server started here with fsync on (or PGTASKS_DATABASE_URL).
Prints enqueue rate (single delay() calls and one bulk call) and drain rate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pgtasks import Client
from pgtasks.engine.options import EnqueueRequest
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]


def drain(url: str, name: str, count: int, concurrency: int, pool: str = "threads") -> float:
    """Queue ``count`` tasks, start one worker, wait for all; return tasks/s measured from the
    database's own timestamps (first start to last completion)."""
    client = Client(url)
    handles = client.engine.enqueue([EnqueueRequest(name=name, queue="bench") for _ in range(count)])
    env = {**os.environ, "PGTASKS_DATABASE_URL": url}
    worker = subprocess.Popen(
        [
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
        ],
        cwd=REPO,
        env=env,
        stderr=subprocess.DEVNULL,
    )
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
    args = parser.parse_args()
    server = None
    print(f"{'database':10} {'delay()/s':>10} {'bulk/s':>10} {'drain noop/s':>13} {'drain 3-step/s':>15}")
    for dialect in args.dialect.split(","):
        if dialect == "postgres":
            url = os.environ.get("PGTASKS_DATABASE_URL", "")
            if not url.startswith("postgres"):
                server = PostgresServer(fsync=True).start()
                url = server.url
        else:
            url = f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
        single, bulk = enqueue_rates(
            url + ("?schema=bench_enqueue" if dialect == "postgres" else ""), args.tasks
        )
        noop = drain(
            url + ("?schema=bench_noop" if dialect == "postgres" else ""),
            "bench.noop",
            args.tasks,
            args.concurrency,
        )
        steps = drain(
            url + ("?schema=bench_steps" if dialect == "postgres" else ""),
            "bench.three_steps",
            args.tasks // 5,
            args.concurrency,
        )
        print(f"{dialect:10} {single:10.0f} {bulk:10.0f} {noop:13.0f} {steps:15.0f}", flush=True)
    if server:
        server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
