"""``make sustained``: a long run at a steady rate with retention on, to show that nothing
decays: table and index sizes level off, the claim and enqueue-to-start times at the end equal
those at the start, and nothing is lost.

    python -m loadtest.sustained [--minutes 60] [--rate 1000] [--workers 2] [--pool threads]
                                 [--concurrency 16] [--result-expires 300] [--sample 60]

A producer sends ``--rate`` tasks a second (ten bulk calls a second) in the mix
``--mix noop:steps:later:flaky`` (default 5:2:2:1; see ``loadtest.sustained_app``) to
``--workers`` worker processes, which prune what finished more than ``--result-expires``
seconds ago every ``--prune-interval`` seconds. Every ``--sample`` seconds one line: tasks
sent and finished per second, the backlog, the size of the tables and of their indexes, dead
rows, the claim's execution time (``EXPLAIN ANALYZE`` of the worker's claim statement, rolled
back) and the enqueue-to-start p50/p99 of the tasks started since the last line. At the end
the producer stops, the workers drain and stop, and the ledger is checked: every task sent
finished exactly once and no step ran twice. Exits 1 if not, or if the tables kept growing
(the last third of the run more than 25% above the middle third).

Uses ``PGTASKS_DATABASE_URL`` when set, else starts a throwaway PostgreSQL (fsync on).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.explain_claim import explain
from bench.throughput import stop_all
from pgtasks import Client
from pgtasks.engine.options import SendOptions
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]
QUEUE = "sustained"
TASKS = ("sustained.noop", "sustained.steps", "sustained.later", "sustained.flaky")
TICKS_PER_SECOND = 10
DRAIN_TIMEOUT = 600.0
GROWTH_LIMIT = 1.25  # the last third of the run against the middle third


@dataclass
class Sample:
    at: float  # seconds since the start
    sent_per_s: float
    done_per_s: float
    backlog: int
    table_mb: float
    index_mb: float
    rows: int
    dead: int
    claim_ms: float
    p50_ms: float | None
    p99_ms: float | None

    def line(self) -> str:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f}"

        return (
            f"| {self.at / 60:5.1f} | {self.sent_per_s:6.0f} | {self.done_per_s:6.0f} | {self.backlog:7,} "
            f"| {self.rows:9,} | {self.table_mb:7.1f} | {self.index_mb:7.1f} | {self.dead:8,} "
            f"| {self.claim_ms:6.2f} | {ms(self.p50_ms):>4} / {ms(self.p99_ms):>4} |"
        )


HEADER = (
    "| minute | sent/s | done/s | backlog | task rows | table MB | index MB | dead rows | claim ms "
    "| start p50 / p99 ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


class Producer(threading.Thread):
    """Sends ``rate`` tasks a second in the mix, as ten bulk calls a second; keeps every id."""

    def __init__(self, url: str, rate: float, mix: list[int]) -> None:
        super().__init__(name="producer", daemon=True)
        self.client = Client(url)
        self.rate, self.sent, self.errors = rate, {name: set() for name in TASKS}, 0
        self.count = 0
        self._cycle = itertools.cycle(
            [name for name, weight in zip(TASKS, mix, strict=True) for _ in range(weight)]
        )
        self._halt = threading.Event()

    def run(self) -> None:
        started, tick = time.monotonic(), 0
        while not self._halt.is_set():
            due = round(self.rate * (tick + 1) / TICKS_PER_SECOND) - round(
                self.rate * tick / TICKS_PER_SECOND
            )
            requests, names = [], []
            for _ in range(due):
                name = next(self._cycle)
                task_id = str(uuid.uuid4())
                countdown = 2.0 if name == "sustained.later" else None
                requests.append(SendOptions(queue=QUEUE, task_id=task_id, countdown=countdown).request(name))
                names.append((name, task_id))
            try:
                self.client.engine.enqueue(requests)
            except Exception as exc:  # counted; the ids were never acknowledged
                self.errors += 1
                print(f"enqueue failed: {exc}", file=sys.stderr, flush=True)
            else:
                for name, task_id in names:
                    self.sent[name].add(task_id)
                self.count += len(names)
            tick += 1
            self._halt.wait(max(0.0, started + tick / TICKS_PER_SECOND - time.monotonic()))

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(30)


def start_worker(url: str, n: int, args: argparse.Namespace, ledger: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "pgtasks", "worker", "-A", "loadtest.sustained_app", "-Q", QUEUE]
    argv += ["-c", str(args.concurrency), "-P", args.pool, "-n", f"sus-{n}-{uuid.uuid4().hex[:6]}"]
    argv += ["--prune-interval", str(args.prune_interval), "-l", "WARNING"]
    env = {
        **os.environ,
        "PGTASKS_DATABASE_URL": url,
        "LOADTEST_LEDGER_DIR": str(ledger),
        "SUSTAINED_RESULT_EXPIRES": str(args.result_expires),
    }
    with (ledger / f"worker-{n}.out").open("ab") as out:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def measure(client: Client, conn: psycopg.Connection, schema: str, since_ms: int) -> dict[str, float]:
    """Sizes, dead rows, the claim's execution time and the start latency since ``since_ms``."""
    sizes = conn.execute(
        """SELECT coalesce(sum(pg_table_size(c.oid)), 0), coalesce(sum(pg_indexes_size(c.oid)), 0),
                  coalesce(sum(s.n_dead_tup), 0)
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
           WHERE n.nspname = %s AND c.relkind = 'r'""",
        (schema,),
    ).fetchone()
    assert sizes is not None
    sql = client.engine.database.sysdb.sql  # type: ignore[attr-defined]
    params = {
        "version": client.engine.version(),
        "executor_id": "sustained-probe",
        "claim_token": "probe",
        "queues": [QUEUE],
        "limits": [16],
        "limit": 16,
    }
    claims = []
    for _ in range(5):
        plan = explain(conn, sql["tasks_claim"], params)
        claims.append(float(plan.rsplit("Execution Time: ", 1)[1].split(" ms")[0]))
    waits = conn.execute(
        f"""SELECT count(*) FILTER (WHERE status = 'SUCCESS' AND updated_at > %(since)s),
                   count(*) FILTER (WHERE status IN ('ENQUEUED', 'DELAYED', 'PENDING')),
                   count(*),
                   percentile_disc(0.5) WITHIN GROUP (ORDER BY CASE WHEN name = ANY(%(plain)s)
                       AND started_at_epoch_ms > %(since)s THEN started_at_epoch_ms - created_at END),
                   percentile_disc(0.99) WITHIN GROUP (ORDER BY CASE WHEN name = ANY(%(plain)s)
                       AND started_at_epoch_ms > %(since)s THEN started_at_epoch_ms - created_at END)
            FROM "{schema}".workflow_status""",
        {"since": since_ms, "plain": ["sustained.noop", "sustained.steps"]},
    ).fetchone()
    assert waits is not None
    return {
        "table_mb": float(sizes[0]) / 2**20,
        "index_mb": float(sizes[1]) / 2**20,
        "dead": float(sizes[2]),
        "claim_ms": statistics.median(claims),
        "done": float(waits[0]),
        "backlog": float(waits[1]),
        "rows": float(waits[2]),
        "p50": float("nan") if waits[3] is None else float(waits[3]),
        "p99": float("nan") if waits[4] is None else float(waits[4]),
    }


def unfinished(client: Client) -> int:
    """Tasks of the queue not yet finished (waiting, delayed or running)."""
    states = ("ENQUEUED", "DELAYED", "PENDING")
    return sum(s.counts.get(state, 0) for s in client.engine.admin.queue_stats() for state in states)


def check_ledger(folder: Path, producer: Producer) -> list[str]:
    """Every task sent finished exactly once; no step ran twice; nothing ran that was not sent."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    for path in folder.glob("effects-*.log"):
        for line in path.read_text().splitlines():
            task_id, label = line.split(" ", 1)
            seen[(task_id, label)] += 1
    problems = []
    sent = set().union(*producer.sent.values())
    done = {task_id for (task_id, label) in seen if label == "done"}
    lost = sent - done
    if lost:
        problems.append(f"{len(lost)} tasks sent never finished, e.g. {sorted(lost)[:3]}")
    twice = [key for key, n in seen.items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} bodies or steps ran more than once, e.g. {twice[:3]}")
    stray = done - sent
    if stray:
        problems.append(f"{len(stray)} tasks finished that no producer sent")
    missing_steps = [
        t for t in producer.sent["sustained.steps"] if any(seen[(t, f"step{i}")] != 1 for i in (1, 2, 3))
    ]
    if missing_steps:
        problems.append(f"{len(missing_steps)} three-step tasks without each step once")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="tasks sent per second")
    parser.add_argument("--mix", default="5:2:2:1", help="weights of noop:steps:later:flaky")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pool", default="threads")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--result-expires", type=float, default=300.0, help="retention, seconds")
    parser.add_argument("--prune-interval", type=float, default=30.0, help="seconds between prune rounds")
    parser.add_argument("--sample", type=float, default=60.0, help="seconds between report lines")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    mix = [int(w) for w in args.mix.split(":")]
    if len(mix) != len(TASKS) or min(mix) < 0 or sum(mix) == 0:
        parser.error("--mix takes four weights, noop:steps:later:flaky, such as 5:2:2:1")
    server = None
    base = os.environ.get("PGTASKS_DATABASE_URL", "")
    if not base.startswith("postgres"):
        server = PostgresServer(fsync=True).start()
        base = server.url
    schema = f"sustained_{time.time_ns()}"
    url = f"{base.split('?')[0]}?schema={schema}"
    ledger = Path(tempfile.mkdtemp(prefix="pgtasks-sustained-"))
    client = Client(url)
    client.engine.admin.migrate()
    workers = [start_worker(url, n, args, ledger) for n in range(args.workers)]
    producer = Producer(url, args.rate, mix)
    samples: list[Sample] = []
    lines = [
        f"Sustained run: {args.minutes:g} min at {args.rate:g} tasks/s (mix noop:steps:later:flaky "
        f"{args.mix}), {args.workers} workers x {args.pool} -c {args.concurrency}, result_expires "
        f"{args.result_expires:g}s, pruning every {args.prune_interval:g}s",
        "",
        HEADER,
    ]
    print("\n".join(lines), flush=True)
    try:
        with psycopg.connect(base.split("?")[0], autocommit=True) as conn:
            started = time.monotonic()
            producer.start()
            last_count, last_at = 0, started
            since_ms = client.engine.admin.now_ms()
            while time.monotonic() - started < args.minutes * 60:
                time.sleep(min(args.sample, max(0.0, started + args.minutes * 60 - time.monotonic())))
                now, now_ms = time.monotonic(), client.engine.admin.now_ms()
                m = measure(client, conn, schema, since_ms)
                sample = Sample(
                    at=now - started,
                    sent_per_s=(producer.count - last_count) / (now - last_at),
                    done_per_s=m["done"] / ((now_ms - since_ms) / 1000),
                    backlog=int(m["backlog"]),
                    table_mb=m["table_mb"],
                    index_mb=m["index_mb"],
                    rows=int(m["rows"]),
                    dead=int(m["dead"]),
                    claim_ms=m["claim_ms"],
                    p50_ms=None if m["p50"] != m["p50"] else m["p50"],
                    p99_ms=None if m["p99"] != m["p99"] else m["p99"],
                )
                samples.append(sample)
                lines.append(sample.line())
                print(sample.line(), flush=True)
                last_count, last_at, since_ms = producer.count, now, now_ms
            producer.stop()
            deadline = time.monotonic() + DRAIN_TIMEOUT
            while unfinished(client):
                if time.monotonic() > deadline:
                    raise TimeoutError("the workers did not drain the backlog")
                time.sleep(0.5)
    finally:
        producer.stop()
        stop_all(workers)
        client.close()
    problems = check_ledger(ledger, producer)
    problems += verdict(samples)
    sent = producer.count
    lines += [
        "",
        f"sent {sent:,} tasks ({producer.errors} failed bulk calls, not acknowledged); "
        + ("nothing lost, nothing ran twice" if not problems else "; ".join(problems)),
    ]
    lines += summary(samples)
    print("\n".join(lines[-1 - len(summary(samples)) :]), flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    if server:
        server.destroy()
    return 1 if problems else 0


def verdict(samples: list[Sample]) -> list[str]:
    """The tables must level off: the last third of the run no bigger than the middle third
    by more than GROWTH_LIMIT (with at least three lines per third to judge)."""
    third = len(samples) // 3
    if third < 1:
        return []
    middle = max(s.table_mb + s.index_mb for s in samples[third : 2 * third])
    last = max(s.table_mb + s.index_mb for s in samples[2 * third :])
    if last > middle * GROWTH_LIMIT + 8:  # 8 MB: a few pages more is not growth
        return [f"the tables kept growing: {middle:.1f} MB in the middle third, {last:.1f} MB in the last"]
    return []


def summary(samples: list[Sample]) -> list[str]:
    if len(samples) < 2:
        return []
    first, end = samples[0], samples[-1]

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f} ms"

    return [
        f"claim execution: {first.claim_ms:.2f} ms at the first line, {end.claim_ms:.2f} ms at the last",
        f"enqueue-to-start p99: {ms(first.p99_ms)} at the first line, {ms(end.p99_ms)} at the last",
        f"tables and indexes: {first.table_mb + first.index_mb:.1f} MB at the first line, "
        f"{max(s.table_mb + s.index_mb for s in samples):.1f} MB at most, "
        f"{end.table_mb + end.index_mb:.1f} MB at the last",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
