"""What ``--metrics-port`` costs a worker: the drain rate of no-op tasks with and without it,
and the cost of the two hooks the worker calls per task, in nanoseconds.

    python -m bench.worker_metrics [--tasks 5000] [--runs 3] [--configs postgres:threads:8,...]

PostgreSQL is a throwaway server started here with fsync on (or PGTASKS_DATABASE_URL). Runs
with and without metrics alternate, so a load that drifts hits both; each figure is the
median of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from bench.throughput import drain
from pgtasks.sysdb.records import Outcome, Status, TaskRecord
from pgtasks.worker.metrics import WorkerMetrics
from tests.support.pgserver import PostgresServer

CONFIGS = "postgres:threads:8,postgres:prefork:2,sqlite:threads:8"
METRICS = ("--metrics-port", "0", "--metrics-address", "127.0.0.1")


def hook_cost_ns(calls: int = 200_000) -> float:
    """Nanoseconds for one ``started`` plus one ``finished`` call (a success)."""
    metrics = WorkerMetrics(lambda: 0, 8)
    now = round(time.time() * 1000)
    record = TaskRecord(
        "t", Status.PENDING, "bench.noop", "[]", "json", "bench", created_at=now, started_at_epoch_ms=now
    )
    outcome = Outcome("t", Status.SUCCESS, output="null")
    t = time.perf_counter_ns()
    for _ in range(calls):
        metrics.started(record)
        metrics.finished(record, outcome, 0.001)
    return (time.perf_counter_ns() - t) / calls


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=5000, help="no-op tasks per drain")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--configs", default=CONFIGS, help="database:pool:concurrency,...")
    args = parser.parse_args()
    print(f"hooks (started + finished): {hook_cost_ns():.0f} ns per task", flush=True)
    server = None
    print("config | drain noop/s without | with --metrics-port | change", flush=True)
    for config in args.configs.split(","):
        dialect, pool, concurrency_text = config.split(":")
        concurrency = int(concurrency_text)
        samples: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.runs):
            for metered in (False, True):
                extra = METRICS if metered else ()
                if dialect == "postgres":
                    base = os.environ.get("PGTASKS_DATABASE_URL", "")
                    if not base.startswith("postgres"):
                        server = server or PostgresServer(fsync=True).start()
                        base = server.url
                    schema = f"bench_metrics_{time.time_ns()}"  # dropped by drain()
                    rate = drain(
                        f"{base}?schema={schema}", "bench.noop", args.tasks, concurrency, pool, extra
                    )
                else:
                    folder = tempfile.mkdtemp(prefix="pgtasks-bench-")
                    rate = drain(
                        f"sqlite:///{folder}/bench.sqlite3",
                        "bench.noop",
                        args.tasks,
                        concurrency,
                        pool,
                        extra,
                    )
                samples[metered].append(rate)
        without, with_ = samples[False], samples[True]
        print(
            f"  {config} runs without: {[round(r) for r in without]}, with: {[round(r) for r in with_]}",
            flush=True,
        )
        off, on = statistics.median(without), statistics.median(with_)
        print(f"{config} | {off:.0f} | {on:.0f} | {(on - off) / off * 100:+.1f}%", flush=True)
    if server:
        server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
