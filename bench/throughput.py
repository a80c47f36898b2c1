"""Enqueue and drain throughput, and enqueue-to-start latency: pgtasks on PostgreSQL and
SQLite with one worker process; beside it, in the same run and on the same server, the raw
SQL ceiling (:mod:`bench.ceiling`) and pgqueuer (:mod:`bench.peers`); Celery 5 on Redis as
the reference; then each target of issue 26 as a ratio to its yardstick.

    python -m bench.throughput [--tasks 20000] [--runs 3] [--configs ...] [--celery ...]

PostgreSQL is a throwaway server started here with fsync on (or PGTASKS_DATABASE_URL). Each
figure is the median of ``--runs`` runs. pgqueuer runs when a Python with pgqueuer is found
(``PGTASKS_PGQUEUER_PYTHON``, else ``.venv-pgqueuer/bin/python``: `make bench` makes it).
Celery runs when a Python with Celery and the redis client is found
(``PGTASKS_CELERY_PYTHON``, else ``.venv-celery/bin/python``: `make celery-env` makes it) and
``redis-server`` is installed.
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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import ceiling, peers, server_state
from pgtasks import Client
from pgtasks.engine.options import SendOptions
from pgtasks.sending import send_many
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]
CONFIGS = "postgres:threads:8,postgres:threads:32,postgres:prefork:2,postgres:asyncio:500,sqlite:threads:8"
# The asyncio pool drains the async twins of the bench tasks.
TASKS_OF_POOL = {"asyncio": ("bench.async_noop", "bench.async_three_steps")}
DEFAULT_TASKS = ("bench.noop", "bench.three_steps")
CELERY_CONFIGS = "prefork:2,threads:8"
PRODUCERS = 16  # producer threads of the many-producer delay() figure


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


def stop_all(workers: list[subprocess.Popen[bytes]], timeout: float = 60) -> None:
    """SIGTERM to every worker at once (each shuts down warm), then wait for each."""
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(timeout)


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
    server_state.settle(url)
    client = Client(url)
    client.engine.enqueue([SendOptions(queue="bench").request(name, args) for _ in range(count)])
    worker = start_worker(url, concurrency, pool, extra, app)
    try:
        # The rate comes from the tasks' own timestamps, so the poll only has to notice the
        # end: the queue's counts (partial indexes, a cost that falls with the backlog) every
        # 100 ms, not a listing, which reads the finished tasks too (8 ms a call at 20,000
        # tasks, a sixth of a core taken from the worker and the server being measured).
        deadline = time.monotonic() + 900
        while unfinished(client):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: the drain did not finish")
            time.sleep(0.1)
        rows = client.list_tasks(name=name, limit=count)
        assert all(r.status.value == "SUCCESS" for r in rows) and len(rows) == count, "a task did not succeed"
        first = min(r.started_at_epoch_ms or 0 for r in rows)
        last = max(r.updated_at for r in rows)
        return count / max((last - first) / 1000, 1e-3)
    finally:
        stop(worker)
        client.close()
        server_state.drop_schema(url)


def unfinished(client: Client) -> int:
    """The tasks of the bench queue still waiting or running (one statement: the counts by
    state that ``Client.list_queues`` shows, without its settings and clock reads)."""
    return sum(sum(q.counts.values()) for q in client.engine.admin.queue_stats() if q.name == "bench")


def start_latency(url: str, rate: float, seconds: float, concurrency: int, pool: str) -> tuple[float, float]:
    """Offer ``rate`` single delay() calls per second for ``seconds`` to one idle worker; return
    p50 and p99 of enqueue-to-start in ms, from the database's own timestamps."""
    server_state.settle(url)
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
        server_state.drop_schema(url)


def enqueue_rates(url: str, count: int) -> tuple[float, float, float, float]:
    """Single delay() calls from one producer (a tenth of ``count``, as for pgqueuer), the same
    count from ``PRODUCERS`` threads sharing one client (a web server's), one bulk call of
    ``count`` tasks, and ``count`` tasks in bulk calls of 100 (what ``Task.map_enqueue`` sends:
    one options object for its tasks, a handle returned for each)."""
    server_state.settle(url)
    client = Client(url)
    # Untimed, as pgqueuer's install and connect are: the first call migrates the fresh schema
    # (half a second, which counted in a thousand single calls halved their rate) and opens
    # the pool's first connection.
    client.enqueue("bench.noop", queue="elsewhere")
    t = time.perf_counter()
    for _ in range(count // 10):
        client.enqueue("bench.noop", queue="elsewhere")
    single = count // 10 / (time.perf_counter() - t)
    each = count // 10 // PRODUCERS

    def produce() -> None:
        for _ in range(each):
            client.enqueue("bench.noop", queue="elsewhere")

    producers = [threading.Thread(target=produce) for _ in range(PRODUCERS)]
    t = time.perf_counter()
    for producer in producers:
        producer.start()
    for producer in producers:
        producer.join()
    many = each * PRODUCERS / (time.perf_counter() - t)
    options = SendOptions(queue="elsewhere")
    t = time.perf_counter()
    send_many(client.engine, "bench.noop", [()] * count, None, options)
    bulk = count / (time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(0, count, 100):
        send_many(client.engine, "bench.noop", [()] * 100, None, options)
    bulk100 = count / (time.perf_counter() - t)
    client.close()
    server_state.drop_schema(url)
    return single, many, bulk, bulk100


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
        "-",
        f"{noop:,.0f}",
        "-",
        f"{p50:.1f}",
        f"{p99:.1f}",
    ]


@dataclass
class Row:
    """The figures of one configuration (None: not measured)."""

    label: str
    single: float | None = None
    single_many: float | None = None  # delay() from PRODUCERS threads
    bulk: float | None = None
    bulk100: float | None = None  # calls of 100
    noop: float | None = None
    steps: float | None = None
    p50: float | None = None
    p99: float | None = None
    in_flight: int | None = None  # tasks a pgtasks pool runs at once (its -c)

    def cells(self) -> list[str]:
        def count(value: float | None) -> str:
            return "-" if value is None else f"{value:,.0f}"

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f}"

        figures = (self.single, self.single_many, self.bulk, self.bulk100, self.noop, self.steps)
        return [self.label, *map(count, figures), ms(self.p50), ms(self.p99)]


def pgtasks_row(
    label: str,
    pool: str,
    concurrency: int,
    args: argparse.Namespace,
    at: Callable[[str], str],
    with_enqueue: bool,
) -> Row:
    """The figures of one pgtasks configuration; ``at(name)`` gives a fresh database URL."""
    row = Row(f"pgtasks / {label} -c {concurrency}", in_flight=concurrency)
    if with_enqueue:
        row.single, row.single_many, row.bulk, row.bulk100 = median_of(
            args.runs, lambda _: enqueue_rates(at("bench_enqueue"), args.tasks)
        )
    noop_task, steps_task = TASKS_OF_POOL.get(pool, DEFAULT_TASKS)
    (row.noop,) = median_of(
        args.runs, lambda _: drain(at("bench_noop"), noop_task, args.tasks, concurrency, pool)
    )
    (row.steps,) = median_of(
        args.runs, lambda _: drain(at("bench_steps"), steps_task, args.tasks // 5, concurrency, pool)
    )
    row.p50, row.p99 = median_of(
        args.runs, lambda _: start_latency(at("bench_latency"), args.rate, args.seconds, concurrency, pool)
    )
    return row


def ceiling_rows(url: str, args: argparse.Namespace) -> tuple[Row, Row, Row]:
    """The raw SQL ceiling: one row per transaction, batches of 100, and pgtasks' own enqueue
    statements into its own table sent raw (single rows, batches of 100)."""
    single, batched = median_of(args.runs, lambda _: ceiling.insert_rates(url, args.tasks))
    (drain_one,) = median_of(args.runs, lambda _: ceiling.drain_rate(url, args.tasks // 4, 1))
    (drain_many,) = median_of(args.runs, lambda _: ceiling.drain_rate(url, args.tasks, ceiling.BATCH))
    own_single, own_batched = median_of(args.runs, lambda _: ceiling.pgtasks_statement_rates(url, args.tasks))
    return (
        Row("raw SQL, one row per transaction", single=single, noop=drain_one),
        Row("raw SQL, batches of 100", bulk=batched, noop=drain_many),
        Row("raw SQL, pgtasks' INSERT statements", single=own_single, bulk=own_batched),
    )


def three_step_ceilings(url: str, rows: list[Row], args: argparse.Namespace) -> dict[int, Row]:
    """For each number of tasks in flight of the PostgreSQL pools: the three-step rate of
    checkpoint commits alone in lockstep (:func:`bench.ceiling.three_step_rate`), as many tasks
    as the pools' three-step drains."""
    counts = sorted({r.in_flight for r in rows if "postgres" in r.label and r.in_flight})
    ceilings = {}
    for count in counts:
        (rate,) = median_of(args.runs, lambda _, n=count: ceiling.three_step_rate(url, n, args.tasks // 5))
        ceilings[count] = Row(f"raw SQL, three commits a task, {count} in flight", steps=rate)
    return ceilings


def pgqueuer_row(url: str, args: argparse.Namespace) -> Row | None:
    python = peers.pgqueuer_python()
    if python is None:
        print("pgqueuer: skipped (no Python with pgqueuer: `make bench` makes .venv-pgqueuer)", flush=True)
        return None
    figures = peers.measure(python, url, args.tasks, args.runs, args.rate, args.seconds)
    return Row(
        f"pgqueuer, one process (batch_size {figures.best_batch_size})",
        single=figures.enqueue_single,
        bulk=figures.enqueue_one_call,
        bulk100=figures.enqueue_batched,
        noop=figures.drain,
        p50=figures.p50_ms,
        p99=figures.p99_ms,
    )


def targets(
    rows: list[Row], raw_many: Row, pgqueuer: Row | None, ceilings: dict[int, Row] | None = None
) -> list[list[str]]:
    """Each goal of issue 26 beside its yardstick from this run (pgqueuer's figures, or the
    same pool's no-op drain), and the raw SQL shares for reference. ``ceilings``: the
    three-step ceiling of each number of tasks in flight (:func:`three_step_ceilings`), shown
    under each pool's three-step goal as the highest ratio that pool could reach here."""
    postgres = [r for r in rows if "postgres" in r.label]
    ceilings = ceilings or {}
    out: list[list[str]] = []

    def add(
        goal: str,
        value: float | None,
        label: str,
        yardstick: float | None,
        what: str,
        needed: float,
        verdicts: tuple[str, str] = ("yes", "NO"),
    ) -> None:
        if not value or not yardstick:
            return
        ratio = value / yardstick
        met = verdicts[0] if ratio >= needed else verdicts[1]
        out.append([goal, f"{value:,.0f} ({label})", f"{yardstick:,.0f} {what}", f"{ratio:.2f}", met])

    peer = pgqueuer or Row("pgqueuer: not measured")
    producer = next((r for r in postgres if r.single is not None), None)
    if producer is not None:
        add(
            "single delay() >= pgqueuer's single enqueue",
            producer.single,
            "one thread",
            peer.single,
            "pgqueuer",
            1.0,
        )
        add(
            f"delay() from {PRODUCERS} threads >= pgqueuer's single enqueue",
            producer.single_many,
            f"{PRODUCERS} threads",
            peer.single,
            "pgqueuer, one producer",
            1.0,
        )
        add(
            "bulk, calls of 100 >= pgqueuer's calls of 100",
            producer.bulk100,
            "calls of 100",
            peer.bulk100,
            "pgqueuer",
            1.0,
        )
        add(
            "bulk, one call >= pgqueuer's one call",
            producer.bulk,
            "one call",
            peer.bulk,
            "pgqueuer",
            1.0,
        )
        add(
            "bulk, one call: share of raw batched INSERTs",
            producer.bulk,
            "one call",
            raw_many.bulk,
            "raw",
            0.0,
        )
    for row in postgres:
        pool = row.label.removeprefix("pgtasks / postgres ")
        needed = 0.5 if "prefork" in pool else 1.0
        add(f"no-op drain >= {needed:g} x pgqueuer's best", row.noop, pool, peer.noop, "pgqueuer", needed)
        add("3-step drain >= 0.4 x no-op drain, same pool", row.steps, pool, row.noop, "no-op", 0.4)
        bound = ceilings.get(row.in_flight or 0)
        if bound is not None:
            add(
                "  its ceiling: three commits a task alone, lockstep",
                bound.steps,
                f"{row.in_flight} in flight",
                row.noop,
                "no-op",
                0.4,
                ("0.4 reachable", "0.4 out of reach"),
            )
        if row.p50 is not None and row.p99 is not None and peer.p50 is not None and peer.p99 is not None:
            met = "yes" if row.p50 <= peer.p50 and row.p99 <= peer.p99 else "NO"
            out.append(
                [
                    "start p50 / p99 at 200/s <= pgqueuer's",
                    f"{row.p50:.1f} / {row.p99:.1f} ms ({pool})",
                    f"{peer.p50:.1f} / {peer.p99:.1f} ms pgqueuer",
                    "-",
                    met,
                ]
            )
    best = max((r.noop for r in postgres if r.noop), default=None)
    add("best no-op drain: share of raw batched drain", best, "best pool", raw_many.noop, "raw", 0.0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20000, help="tasks per drain and enqueue run")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--configs", default=CONFIGS, help="database:pool:concurrency,...")
    parser.add_argument("--celery", default=CELERY_CONFIGS, help="pool:concurrency,... or 'none'")
    parser.add_argument(
        "--peers", choices=("yes", "no"), default="yes", help="measure pgqueuer and the raw SQL"
    )
    parser.add_argument("--rate", type=float, default=200.0, help="offered load for the latency run")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the latency run")
    args = parser.parse_args()
    server = None
    header = [
        "system",
        "delay()/s",
        f"delay() x{PRODUCERS}/s",
        "bulk/s",
        "bulk 100/s",
        "drain noop/s",
        "drain 3-step/s",
        "start p50 ms",
        "start p99 ms",
    ]
    print(" | ".join(header), flush=True)
    rows: list[Row] = []
    measured_enqueue: set[str] = set()
    postgres_url = os.environ.get("PGTASKS_DATABASE_URL", "")
    for config in args.configs.split(","):
        dialect, pool, concurrency_text = config.split(":")
        concurrency = int(concurrency_text)
        if dialect == "postgres":
            if not postgres_url.startswith("postgres"):
                server = server or PostgresServer(fsync=True).start()
                postgres_url = server.url

            def at(schema: str, base: str = postgres_url) -> str:
                return f"{base}?schema={schema}_{time.time_ns()}"
        else:
            folder = tempfile.mkdtemp(prefix="pgtasks-bench-")

            def at(schema: str, folder: str = folder) -> str:
                return f"sqlite:///{folder}/{schema}_{time.time_ns()}.sqlite3"

        with_enqueue = dialect not in measured_enqueue  # the producer's rates do not depend on the pool
        measured_enqueue.add(dialect)
        rows.append(pgtasks_row(f"{dialect} {pool}", pool, concurrency, args, at, with_enqueue))
        print(" | ".join(rows[-1].cells()), flush=True)
    if args.peers == "yes":
        if not postgres_url.startswith("postgres"):
            server = server or PostgresServer(fsync=True).start()
            postgres_url = server.url
        raw_one, raw_many, raw_own = ceiling_rows(postgres_url, args)
        ceilings = three_step_ceilings(postgres_url, rows, args)
        for raw in (raw_one, raw_many, raw_own, *ceilings.values()):
            print(" | ".join(raw.cells()), flush=True)
        pgqueuer = pgqueuer_row(postgres_url, args)
        if pgqueuer is not None:
            print(" | ".join(pgqueuer.cells()), flush=True)
        print("\ntarget | pgtasks | yardstick (same run) | ratio | met", flush=True)
        for line in targets(rows, raw_many, pgqueuer, ceilings):
            print(" | ".join(line), flush=True)
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
