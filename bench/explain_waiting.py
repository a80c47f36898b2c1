"""EXPLAIN ANALYZE of the statements of durable waiting (docs/waiting.md) with a large
history: ``--rows`` finished tasks, a tenth of them sleeping or waiting for a message (DELAYED,
half with a ``wait_for``), and as many consumed messages beside a few unconsumed ones. Each
statement runs in a transaction that is rolled back.

    python -m bench.explain_waiting [--rows 200000]

Exits 1 if a plan reads ``workflow_status`` or ``notifications`` with a sequential scan.
"""

from __future__ import annotations

import argparse
import sys

import psycopg

from bench.explain_claim import explain
from pgtasks.sysdb.postgres import PostgresSystemDatabase
from pgtasks.sysdb.urls import parse_database_url
from tests.support.pgserver import PostgresServer


def fill(schema: str, conn: psycopg.Connection, rows: int) -> None:
    """Finished tasks, a tenth of them waiting (DELAYED), and a message per task, consumed
    but for one in a hundred."""
    conn.execute(
        f"""
        INSERT INTO {schema}.workflow_status (workflow_uuid, status, name, inputs, queue_name,
            delay_until_epoch_ms, wait_for, created_at, updated_at)
        SELECT 't' || g, CASE WHEN g %% 10 = 0 THEN 'DELAYED' ELSE 'SUCCESS' END, 'bench.wait',
               '{{"args":[],"kwargs":{{}}}}', 'default',
               CASE WHEN g %% 10 = 0 THEN 4102444800000 + g END,
               CASE WHEN g %% 20 = 0 THEN 'message:t' || g || ':__default__' END, g, g
        FROM generate_series(1, %s) AS g
        """,
        (rows,),
    )
    conn.execute(
        f"""
        INSERT INTO {schema}.notifications (message_uuid, destination_uuid, topic, message,
            created_at_epoch_ms, consumed)
        SELECT 'm' || g, 't' || g, '__default__', '1', g, g %% 100 <> 0
        FROM generate_series(1, %s) AS g
        """,
        (rows,),
    )
    conn.execute(f"ANALYZE {schema}.workflow_status")
    conn.execute(f"ANALYZE {schema}.notifications")


# The UPDATE of pgtasks_wake() (a function's statements are not shown by EXPLAIN of its call).
WAKE_UPDATE = """
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', delay_until_epoch_ms = NULL, wait_for = NULL, updated_at = 0
WHERE wait_for = %(wait_for)s AND status = 'DELAYED'
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    server = PostgresServer().start()
    try:
        db = PostgresSystemDatabase(parse_database_url(server.url + "?schema=waiting"))
        db.migrate()
        bad = False
        with psycopg.connect(server.url, autocommit=True) as conn:
            fill(db.schema, conn, args.rows)
            probes = {
                "tasks_promote_delayed (the wake-up by time)": (db.sql["tasks_promote_delayed"], {}),
                "tasks_next_due": (db.sql["tasks_next_due"], {"queues": ["default"]}),
                "pgtasks_wake's UPDATE (the wake-up by a message or event)": (
                    WAKE_UPDATE.format(schema=db.schema),
                    {"wait_for": "message:t20:__default__"},
                ),
                "message_oldest (a receive)": (
                    db.sql["message_oldest"],
                    {"task_id": "t100", "topic": "__default__"},
                ),
                "task_suspend": (
                    db.sql["task_suspend"],
                    {
                        "task_id": "t7",
                        "executor_id": "w",
                        "claim_token": None,
                        "wake_at": 1,
                        "wait_for": None,
                    },
                ),
            }
            for title, (sql, params) in probes.items():
                plan = explain(conn, sql, params)
                print(f"-- {title}\n{plan}\n")
                bad |= "Seq Scan on workflow_status" in plan or "Seq Scan on notifications" in plan
        db.close()
    finally:
        server.destroy()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
