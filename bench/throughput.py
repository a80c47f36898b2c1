"""Enqueue and drain throughput, and enqueue-to-start latency: pgtasks on PostgreSQL and
SQLite with one worker process, and Celery 5 on Redis as the reference.

    python -m bench.throughput [--tasks 20000] [--runs 3] [--configs ...] [--celery ...]

PostgreSQL is a throwaway server started here with fsync on (or PGTASKS_DATABASE_URL). Each
figure is the median of ``--runs`` runs. Celery runs when a Python with Celery and the redis
client is found (``PGTASKS_CELERY_PYTHON``, else ``.venv-celery/bin/python``: `make
celery-env` makes it) and ``redis-server`` is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pgtasks import Client
from pgtasks.engine.options import SendOptions
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]
CONFIGS = "postgres:threads:8,postgres:threads:32,postgres:prefork:2,sqlite:threads:8"
CELERY_CONFIGS = "prefork:2,threads:8"


def start_worker(
    url: str, concurrency: int, pool: str, extra: tuple[str, ...] = (), app: str = "bench.noop_app"
) -> subprocess.Popen[bytes]:
    """One `pgtasks worker` process for the bench app's queue (``extra``: more flags)."""
    argv = [sys.executable, "-m", "pgtasks", "worker", "-A", app, "-Q", "bench"]
    argv += ["-c", str(concurrency), "-P", pool, "-n", f"bench-{time.time_ns()}", "-l", "WARNING", *extra]
    env = {**os.environ, "PGTASKS_DATABASE_URL": url}
    return subprocess.Popen(argv, cwd=REPO, env=env, stderr=subprocess.DEVNULL)


def stop(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    worker.wait(30)


def drain(
    url: str,
    name: str,
    count: int,
    concurrency: int,
    pool: str,
    extra: tuple[str, ...] = (),
    app: str = "bench.noop_app",
    args: tuple[object, ...] = (),
) -> float:
    """Queue ``count`` tasks, start one worker, wait for all; return tasks/s measured from the
    database's own timestamps (first start to last completion)."""
    client = Client(url)
    client.engine.enqueue([SendOptions(queue="bench").request(name, args) for _ in range(count)])
    worker = start_worker(url, concurrency, pool, extra, app)
    try:
        # One cheap query every 50 ms rather than a wait per task, which would take CPU from
        # the worker and the database being measured.
        deadline = time.monotonic() + 900
        while client.list_tasks(status=["ENQUEUED", "PENDING"], name=name, limit=1):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: the drain did not finish")
            time.sleep(0.05)
        rows = client.list_tasks(name=name, limit=count)
        assert all(r.status.value == "SUCCESS" for r in rows) and len(rows) == count, "a task did not succeed"
        first = min(r.started_at_epoch_ms or 0 for r in rows)
        last = max(r.updated_at for r in rows)
        return count / max((last - first) / 1000, 1e-3)
    finally:
        stop(worker)
        client.close()


def start_latency(url: str, rate: float, seconds: float, concurrency: int, pool: str) -> tuple[float, float]:
    """Offer ``rate`` single delay() calls per second for ``seconds`` to one idle worker; return
    p50 and p99 of enqueue-to-start in ms, from the database's own timestamps."""
    client = Client(url)
    worker = start_worker(url, concurrency, pool)
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
        stop(worker)
        client.close()


def enqueue_rates(url: str, count: int) -> tuple[float, float]:
    """Single delay() calls from one producer, then one bulk call of ``count`` tasks."""
    client = Client(url)
    t = time.perf_counter()
    for _ in range(count):
        client.enqueue("bench.noop", queue="elsewhere")
    single = count / (time.perf_counter() - t)
    t = time.perf_counter()
    client.engine.enqueue([SendOptions(queue="elsewhere").request("bench.noop") for _ in range(count)])
    bulk = count / (time.perf_counter() - t)
    client.close()
    return single, bulk


def median_of(runs: int, measure: Callable[[int], float | tuple[float, ...]]) -> tuple[float, ...]:
    """Run ``measure(run_number)`` ``runs`` times; the median of each figure it returns."""
    results = []
    for run in range(runs):
        value = measure(run)
        results.append(value if isinstance(value, tuple) else (value,))
    return tuple(statistics.median(column) for column in zip(*results, strict=True))


def celery_python() -> str | None:
    """A Python with Celery and the redis client, kept apart from pgtasks' own venv."""
    for candidate in (os.environ.get("PGTASKS_CELERY_PYTHON"), str(REPO / ".venv-celery/bin/python")):
        if candidate and Path(candidate).exists():
            probe = subprocess.run([candidate, "-c", "import celery, redis"], capture_output=True)
            if probe.returncode == 0:
                return candidate
    return None


def celery_row(python: str, pool: str, concurrency: int, args: argparse.Namespace) -> list[str]:
    def run(_: int) -> tuple[float, ...]:
        argv = [python, "-m", "bench.celery_side", "--tasks", str(args.tasks), "--pool", pool]
        argv += ["--concurrency", str(concurrency), "--rate", str(args.rate), "--seconds", str(args.seconds)]
        out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        return result["enqueue"], result["drain"], result["p50"], result["p99"]

    enqueue, noop, p50, p99 = median_of(args.runs, run)
    return [
        f"Celery 5 / Redis {pool} -c {concurrency}",
        f"{enqueue:,.0f}",
        "-",
        f"{noop:,.0f}",
        "-",
        f"{p50:.1f}",
        f"{p99:.1f}",
    ]


def pgtasks_row(
    label: str,
    pool: str,
    concurrency: int,
    args: argparse.Namespace,
    at: Callable[[str], str],
    with_enqueue: bool,
) -> list[str]:
    """The figures of one pgtasks configuration; ``at(name)`` gives a fresh database URL."""
    single = bulk = "-"
    if with_enqueue:
        s, b = median_of(args.runs, lambda _: enqueue_rates(at("bench_enqueue"), args.tasks))
        single, bulk = f"{s:,.0f}", f"{b:,.0f}"
    (noop,) = median_of(
        args.runs, lambda _: drain(at("bench_noop"), "bench.noop", args.tasks, concurrency, pool)
    )
    (steps,) = median_of(
        args.runs, lambda _: drain(at("bench_steps"), "bench.three_steps", args.tasks // 5, concurrency, pool)
    )
    p50, p99 = median_of(
        args.runs, lambda _: start_latency(at("bench_latency"), args.rate, args.seconds, concurrency, pool)
    )
    return [
        f"pgtasks / {label} -c {concurrency}",
        single,
        bulk,
        f"{noop:,.0f}",
        f"{steps:,.0f}",
        f"{p50:.1f}",
        f"{p99:.1f}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20000, help="tasks per drain and enqueue run")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--configs", default=CONFIGS, help="database:pool:concurrency,...")
    parser.add_argument("--celery", default=CELERY_CONFIGS, help="pool:concurrency,... or 'none'")
    parser.add_argument("--rate", type=float, default=200.0, help="offered load for the latency run")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the latency run")
    args = parser.parse_args()
    server = None
    header = [
        "system",
        "delay()/s",
        "bulk/s",
        "drain noop/s",
        "drain 3-step/s",
        "start p50 ms",
        "start p99 ms",
    ]
    print(" | ".join(header), flush=True)
    measured_enqueue: set[str] = set()
    for config in args.configs.split(","):
        dialect, pool, concurrency_text = config.split(":")
        concurrency = int(concurrency_text)
        if dialect == "postgres":
            url = os.environ.get("PGTASKS_DATABASE_URL", "")
            if not url.startswith("postgres"):
                server = server or PostgresServer(fsync=True).start()
                url = server.url

            def at(schema: str, base: str = url) -> str:
                return f"{base}?schema={schema}_{time.time_ns()}"
        else:
            folder = tempfile.mkdtemp(prefix="pgtasks-bench-")

            def at(schema: str, folder: str = folder) -> str:
                return f"sqlite:///{folder}/{schema}_{time.time_ns()}.sqlite3"

        with_enqueue = dialect not in measured_enqueue  # the producer's rates do not depend on the pool
        measured_enqueue.add(dialect)
        print(
            " | ".join(pgtasks_row(f"{dialect} {pool}", pool, concurrency, args, at, with_enqueue)),
            flush=True,
        )
    if server:
        server.destroy()
    python = celery_python() if args.celery != "none" else None
    if args.celery != "none" and python is None:
        print("Celery: skipped (no Python with celery and redis: run `make celery-env`)", flush=True)
    elif python and shutil.which("redis-server") is None:
        print("Celery: skipped (redis-server is not installed: apt-get install redis-server)", flush=True)
    elif python:
        for config in args.celery.split(","):
            pool, concurrency_text = config.split(":")
            print(" | ".join(celery_row(python, pool, int(concurrency_text), args)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
