"""A fleet on one database: W worker processes x ``-c C`` draining one backlog of no-op tasks
(default 16 x 8, as issue 16 asks), with the server's side watched while they drain.

    python -m bench.fleet [--workers 16] [--concurrency 8] [--pool threads] [--tasks 100000]

Reports the drain rate (first start to last completion, by the database's timestamps), the
connections the fleet held (``pg_stat_activity``, most seen at once, and per worker against
the budget of docs/production.md), and how often a backend of the fleet was seen waiting on a
lock while it drained (``wait_event_type`` Lock or LWLock, sampled every 50 ms), and how many
of those waits were claims (``FOR UPDATE SKIP LOCKED`` in the sampled query): claims that
queued behind each other on a lock would show there.

Uses the server of ``PGTASKS_DATABASE_URL`` when set (in a database it creates), else starts a
throwaway PostgreSQL (fsync on).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

from bench.throughput import stop_all
from pgtasks import Client
from pgtasks.engine.options import SendOptions
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]
SAMPLE_EVERY = 0.05


class ActivityWatch(threading.Thread):
    """Samples the fleet's backends (application_name pgtasks*) until stopped."""

    def __init__(self, dsn: str) -> None:
        super().__init__(name="activity", daemon=True)
        self.dsn = dsn
        self.samples = 0
        self.most_connections = 0
        self.busy = 0  # backend-samples running a statement
        self.waits: collections.Counter[str] = collections.Counter()  # backend-samples waiting, by kind
        self.claim_waits = 0  # of those, on a claim statement
        self._halt = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self._halt.is_set():
                rows = conn.execute(
                    """SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity
                       WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                         AND datname = current_database()"""
                ).fetchall()
                self.samples += 1
                self.most_connections = max(self.most_connections, len(rows))
                for state, kind, event, query in rows:
                    if state != "active":
                        continue
                    self.busy += 1
                    if kind in ("Lock", "LWLock"):
                        self.waits[f"{kind}:{event}"] += 1
                        if "FOR UPDATE SKIP LOCKED" in (query or ""):
                            self.claim_waits += 1
                self._halt.wait(SAMPLE_EVERY)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pool", default="threads")
    parser.add_argument("--tasks", type=int, default=100_000)
    args = parser.parse_args(argv)
    server = None
    base = os.environ.get("PGTASKS_DATABASE_URL", "")
    if not base.startswith("postgres"):
        server = PostgresServer(fsync=True).start()  # max_connections 300
        base = server.url
    # A database of its own: pg_stat_activity then shows the fleet's sessions and no others.
    database = f"fleet_{time.time_ns()}"
    with psycopg.connect(base.split("?")[0], autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    dsn = f"{base.split('?')[0].rsplit('/', 1)[0]}/{database}"
    url = f"{dsn}?schema=fleet"
    schema = "fleet"
    client = Client(url)
    client.engine.enqueue([SendOptions(queue="bench").request("bench.noop") for _ in range(args.tasks)])
    client.close()  # from here on every client backend but the two below is the fleet's
    watch = ActivityWatch(dsn)
    watch.start()
    env = {**os.environ, "PGTASKS_DATABASE_URL": url}
    argv = [sys.executable, "-m", "pgtasks", "worker", "-A", "bench.noop_app", "-Q", "bench"]
    argv += ["-c", str(args.concurrency), "-P", args.pool, "-l", "WARNING"]
    workers = [
        subprocess.Popen([*argv, "-n", f"fleet-{n}"], cwd=REPO, env=env, stderr=subprocess.DEVNULL)
        for n in range(args.workers)
    ]
    unfinished = (
        f"""SELECT count(*) FROM "{schema}".workflow_status WHERE status IN ('ENQUEUED', 'PENDING')"""
    )
    try:
        deadline = time.monotonic() + 900
        with psycopg.connect(dsn, autocommit=True) as poll:
            while (poll.execute(unfinished).fetchone() or (0,))[0]:
                if time.monotonic() > deadline:
                    raise TimeoutError("the fleet did not drain the backlog")
                time.sleep(0.1)
    finally:
        watch.stop()
        stop_all(workers)
    with psycopg.connect(dsn) as conn:
        first, last, done = conn.execute(
            f"""SELECT min(started_at_epoch_ms), max(updated_at), count(*) FILTER (WHERE status = 'SUCCESS')
                FROM "{schema}".workflow_status"""
        ).fetchone() or (0, 0, 0)
    if server:
        server.destroy()
    rate = done / max((last - first) / 1000, 1e-3)
    fleet = watch.most_connections - 1  # the polling connection above
    per_worker = fleet / args.workers
    waited = sum(watch.waits.values())
    share = 100 * waited / max(watch.busy, 1)
    print(f"fleet: {args.workers} workers x {args.pool} -c {args.concurrency}, {args.tasks:,} no-op tasks")
    print(f"drained {done:,} tasks at {rate:,.0f} tasks/s (first start to last completion)")
    print(f"connections: {fleet} at most ({per_worker:.1f} per worker)")
    print(
        f"lock waits: {waited} of {watch.busy} active backend samples ({share:.1f}%), "
        f"{watch.claim_waits} on a claim; by kind: {dict(watch.waits.most_common(6))}"
    )
    return 0 if done == args.tasks else 1


if __name__ == "__main__":
    raise SystemExit(main())
