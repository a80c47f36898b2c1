"""EXPLAIN ANALYZE of the three claim statements with a large backlog (default 1,000,000
queued tasks over three queues), each inside a transaction that is rolled back, both as a
custom plan and as the generic plan the worker's claim sessions use.

    python -m bench.explain_claim [--rows 1000000]

Exits 1 if a plan reads ``workflow_status`` with a sequential scan or takes over 10 ms.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import uuid

import psycopg
from psycopg import sql as sql_

from pgtasks.sysdb.pg_sessions import session_options
from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.urls import parse_database_url
from tests.support.pgserver import PostgresServer

QUEUES = ("default", "emails", "reports")
SLOW_MS = 10.0  # a claim that takes longer than this at a million rows is a plan to fix


def fill(db: PostgresSystemDatabase, conn: psycopg.Connection, rows: int) -> None:
    """Insert ``rows`` ENQUEUED tasks with mixed queues and priorities, and finished ones beside."""
    schema = db.schema
    conn.execute(
        f"""
        INSERT INTO {schema}.workflow_status (workflow_uuid, status, name, inputs, serialization,
            queue_name, priority, queue_partition_key, max_recovery_attempts, created_at, updated_at)
        SELECT 'q' || g, CASE WHEN g %% 4 = 0 THEN 'SUCCESS' ELSE 'ENQUEUED' END, 'bench.noop',
               '{{"args":[],"kwargs":{{}}}}', 'json', (ARRAY{list(QUEUES)!r})[1 + g %% 3], g %% 5,
               'tenant-' || (g %% 50), 100, g, g
        FROM generate_series(1, %s) AS g
        """,
        (rows * 4 // 3,),
    )
    conn.execute(f"ANALYZE {schema}.workflow_status")


def explain(conn: psycopg.Connection, sql: str, params: dict[str, object]) -> str:
    """The plan PostgreSQL makes for these parameter values (a custom plan)."""
    with conn.transaction(force_rollback=True):
        plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql, params).fetchall()
    return "\n".join(row[0] for row in plan)


def explain_generic(conn: psycopg.Connection, sql: str, params: dict[str, object]) -> str:
    """The generic plan, made without the parameter values: what the worker's claim sessions
    use (plan_cache_mode = force_generic_plan)."""
    names: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.execute("PREPARE claim_plan AS " + re.sub(r"%\((\w+)\)[sb]", placeholder, sql))
    try:
        values = sql_.SQL(", ").join(sql_.Literal(params[name]) for name in names)
        with conn.transaction(force_rollback=True):
            statement = sql_.SQL("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE claim_plan ({})").format(
                values
            )
            plan = conn.execute(statement).fetchall()
    finally:
        conn.execute("DEALLOCATE claim_plan")
        conn.execute("RESET plan_cache_mode")
    return "\n".join(row[0] for row in plan)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000, help="queued tasks")
    args = parser.parse_args()
    server = None
    url = os.environ.get("PGTASKS_DATABASE_URL", "")
    if not url.startswith("postgres"):
        server = PostgresServer(fsync=True).start()
        url = server.url
    db = PostgresSystemDatabase(parse_database_url(f"{url}?schema=bench_explain_{time.time_ns()}"))
    db.migrate()
    bad = False
    try:
        options = session_options(db.target.dsn)  # as the worker's sessions (JIT off)
        with psycopg.connect(db.target.dsn, autocommit=True, options=options) as conn:
            started = time.perf_counter()
            fill(db, conn, args.rows)
            took = time.perf_counter() - started
            print(f"{args.rows:,} queued tasks (and {args.rows // 3:,} finished) in {took:.0f}s")
            common = {"version": "v1", "executor_id": "explain", "claim_token": str(uuid.uuid4())}
            cases = [
                ("tasks_claim", {**common, "queues": list(QUEUES), "limits": [10, 10, 10], "limit": 10}),
                (
                    "tasks_claim_limited",
                    {
                        **common,
                        "queue": "emails",
                        "limit": 10,
                        "concurrency": 50,
                        "rate_max": 1000,
                        "period_ms": 1000,
                    },
                ),
                (
                    "tasks_claim_partitioned",
                    {
                        **common,
                        "queue": "reports",
                        "limit": 10,
                        "concurrency": 2,
                        "rate_max": None,
                        "period_ms": 0,
                    },
                ),
            ]
            for name, params in cases:
                for kind, make_plan in (("custom", explain), ("generic", explain_generic)):
                    plan = make_plan(conn, db.sql[name], params)
                    print(f"\n-- {name} ({kind} plan)\n{plan}")
                    took = float(plan.rsplit("Execution Time: ", 1)[1].split(" ms")[0])
                    if "Seq Scan on workflow_status" in plan or took > SLOW_MS:
                        bad = True
                        print(f"!! {name}: a sequential scan of the tasks, or slower than {SLOW_MS} ms")
    finally:
        db.close()
        if server:
            server.destroy()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
