"""Render time of every dashboard page and API endpoint with a large history (default
10,000,000 finished tasks over three queues, plus a backlog and running tasks), against a
real `pgtasks dashboard` process.

    python -m bench.dashboard_pages [--rows 10000000]

Prints the median of 5 requests per URL and exits 1 if one is over 200 ms.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import psycopg

from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.urls import parse_database_url
from tests.support.pgserver import PostgresServer

TARGET_MS = 200.0
QUEUES = ("default", "emails", "reports")


def fill(conn: psycopg.Connection, schema: str, rows: int) -> None:
    """``rows`` finished tasks (1 in 50 failed, 1 in 5,000 dead-lettered) created over the
    last 30 days, the newest within the last 15 minutes; 2,000 ENQUEUED and 50 PENDING."""
    now_ms = int(time.time() * 1000)
    span = 30 * 24 * 3600 * 1000
    conn.execute(
        f"""
        INSERT INTO {schema}.workflow_status (workflow_uuid, status, name, inputs, serialization,
            output, queue_name, priority, executor_id, max_recovery_attempts, recovery_attempts,
            created_at, updated_at, started_at_epoch_ms)
        SELECT 'f' || g,
               CASE WHEN g %% 5000 = 0 THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'
                    WHEN g %% 50 = 0 THEN 'ERROR' ELSE 'SUCCESS' END,
               'bench.task' || (g %% 7), '{{"args":[1],"kwargs":{{}}}}', 'json', '1',
               (ARRAY{list(QUEUES)!r})[1 + g %% 3], 0, 'gone-' || (g %% 20), 100, 1,
               %(start)s + g * (%(span)s / %(rows)s), %(start)s + g * (%(span)s / %(rows)s) + 50,
               %(start)s + g * (%(span)s / %(rows)s) + 10
        FROM generate_series(1, %(rows)s) AS g
        """,
        {"start": now_ms - span, "span": span, "rows": rows},
    )
    conn.execute(
        f"""
        INSERT INTO {schema}.workflow_status (workflow_uuid, status, name, inputs, serialization,
            queue_name, priority, executor_id, max_recovery_attempts, created_at, updated_at,
            started_at_epoch_ms)
        SELECT 'w' || g, CASE WHEN g <= 50 THEN 'PENDING' ELSE 'ENQUEUED' END, 'bench.task1',
               '{{"args":[],"kwargs":{{}}}}', 'json', (ARRAY{list(QUEUES)!r})[1 + g %% 3], 0,
               CASE WHEN g <= 50 THEN 'bench-worker' END, 100, %(now)s - g, %(now)s - g,
               CASE WHEN g <= 50 THEN %(now)s - g END
        FROM generate_series(1, 2050) AS g
        """,
        {"now": now_ms},
    )
    for q in QUEUES:
        conn.execute(
            f"INSERT INTO {schema}.queues (queue_id, name, created_at, updated_at) VALUES (%s, %s, 0, 0)"
            " ON CONFLICT DO NOTHING",
            (q, q),
        )
    conn.execute(
        f"INSERT INTO {schema}.executors (executor_id, hostname, pid, application_version, queues,"
        " started_at, last_heartbeat, lease_ms) VALUES ('bench-worker', 'bench', 1, 'v1', 'default',"
        " %(now)s, %(now)s + 3600000, 3600000)",
        {"now": now_ms},
    )
    conn.execute(f"ANALYZE {schema}.workflow_status")


def median_ms(url: str, times: int = 5) -> tuple[float, int]:
    taken = []
    status = 0
    for _ in range(times):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as response:
            response.read()
            status = response.status
        taken.append((time.perf_counter() - started) * 1000)
    return statistics.median(taken), status


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000, help="finished tasks")
    args = parser.parse_args()
    server = None
    url = os.environ.get("PGTASKS_DATABASE_URL", "")
    if not url.startswith("postgres"):
        server = PostgresServer(fsync=True).start()
        url = server.url
    schema = f"bench_board_{time.time_ns()}"
    db_url = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    db = PostgresSystemDatabase(parse_database_url(db_url))
    db.migrate()
    proc = None
    slow = False
    try:
        with psycopg.connect(db.target.dsn, autocommit=True) as conn:
            started = time.perf_counter()
            fill(conn, db.schema, args.rows)
            print(f"{args.rows:,} finished tasks in {time.perf_counter() - started:.0f}s")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "PGTASKS_DATABASE_URL": db_url}
        proc = subprocess.Popen([sys.executable, "-m", "pgtasks", "dashboard", "--port", str(port)], env=env)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/live", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        middle = f"f{args.rows // 2}"
        paths = [
            "/", "/live", "/queues", "/workers", "/live/workers", "/schedules", "/dead-letters",
            "/live/tasks", "/live/tasks?status=ERROR",
            "/tasks", "/tasks?status=ERROR", "/tasks?queue=emails", "/tasks?name=bench.task3",
            "/tasks?worker=gone-7", f"/tasks?key={int(time.time() * 1000) - 10 * 24 * 3600 * 1000}.0",
            f"/task/{middle}", "/metrics",
            "/api/tasks?limit=100", "/api/tasks?state=FAILURE&limit=100", "/api/tasks?limit=100&offset=1000",
            f"/api/task/info/{middle}", f"/api/task/result/{middle}", "/api/queues/length", "/api/workers",
        ]  # fmt: skip
        print(f"{'url':60} {'median ms':>10}")
        for path in paths:
            took, status = median_ms(base + path)
            flag = "" if took <= TARGET_MS else f"  !! over {TARGET_MS:.0f} ms"
            slow = slow or took > TARGET_MS
            print(f"{path:60} {took:10.1f}  ({status}){flag}")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        with psycopg.connect(db.target.dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {db.schema} CASCADE")
        db.close()
        if server:
            server.destroy()
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
