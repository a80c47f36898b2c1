"""The raw SQL ceiling: what one Python process with psycopg gets from the same PostgreSQL for
the least a queue must do, the yardstick the other figures of ``make bench`` are divided by.

The table is the least a queue needs: an id, the queue and task name, the arguments, a
status, a timestamp, and one partial index of the waiting rows in claim order.

- **insert, one row per transaction**: single INSERTs in autocommit from one thread (what one
  ``delay()`` must at least cost: a round trip and a commit);
- **insert, batches of 100**: one multi-row INSERT (``unnest`` of arrays) per transaction;
- **drain, one row per transaction** and **batches of 100**: a claim (``UPDATE ... WHERE id IN
  (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n)``) committed, then the rows marked done in a
  second commit, as a worker must (the work runs between the two, outside any transaction);
- **three steps, n in flight**: the least that durable three-step tasks must commit when n of
  them run at once and each step waits for its checkpoint's commit before the next step
  starts (``docs/guarantees.md``): rounds of one multi-row INSERT, one row for each task in
  flight, committed with its WAL flush; three rounds a task. Nothing else is done (no claim,
  no outcome, no task code, the smallest checkpoint table), so no pool with n tasks in flight
  can run three-step tasks faster on this server: its rate divided by the same pool's no-op
  drain is the highest three-step ratio that pool could reach.
"""

from __future__ import annotations

import time

import psycopg

from bench import server_state

SETUP = """
DROP TABLE IF EXISTS raw_jobs;
CREATE TABLE raw_jobs (
    id bigserial PRIMARY KEY,
    queue text NOT NULL,
    name text NOT NULL,
    args text,
    status text NOT NULL DEFAULT 'queued',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX raw_jobs_queued ON raw_jobs (queue, id) WHERE status = 'queued';
"""
INSERT_ONE = "INSERT INTO raw_jobs (queue, name, args) VALUES (%s, %s, %s)"
INSERT_MANY = (
    "INSERT INTO raw_jobs (queue, name, args) SELECT 'bench', 'bench.noop', a FROM unnest(%s::text[]) AS a"
)
CLAIM = (
    "UPDATE raw_jobs SET status = 'running' WHERE id IN ("
    " SELECT id FROM raw_jobs WHERE status = 'queued' AND queue = 'bench'"
    " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id"
)
COMPLETE = "UPDATE raw_jobs SET status = 'done' WHERE id = ANY(%s)"
BATCH = 100
CHECKPOINTS_SETUP = """
DROP TABLE IF EXISTS raw_checkpoints;
CREATE TABLE raw_checkpoints (
    task_id text NOT NULL,
    step int NOT NULL,
    output text,
    PRIMARY KEY (task_id, step)
);
"""
CHECKPOINT_ROUND = (
    "INSERT INTO raw_checkpoints (task_id, step, output) SELECT t, %s, 'null' FROM unnest(%s::text[]) AS t"
)
STEPS = 3


def _connect(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True)


def insert_rates(url: str, count: int) -> tuple[float, float]:
    """Rows per second: single-row transactions, then batches of 100."""
    with _connect(url) as conn:
        conn.execute(SETUP)
        server_state.settle(url)
        started = time.perf_counter()
        for _ in range(count):
            conn.execute(INSERT_ONE, ("bench", "bench.noop", "[]"), prepare=True)
        single = count / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(0, count, BATCH):
            conn.execute(INSERT_MANY, (["[]"] * BATCH,), prepare=True)
        batched = count // BATCH * BATCH / (time.perf_counter() - started)
    return single, batched


def drain_rate(url: str, count: int, batch: int) -> float:
    """Rows per second claimed and completed, ``batch`` rows per claim and per completion."""
    with _connect(url) as conn:
        conn.execute(SETUP)
        server_state.settle(url)
        for _ in range(0, count, 1000):
            conn.execute(INSERT_MANY, (["[]"] * 1000,))
        conn.execute("VACUUM ANALYZE raw_jobs")
        done = 0
        started = time.perf_counter()
        while True:
            ids = [row[0] for row in conn.execute(CLAIM, (batch,), prepare=True)]
            if not ids:
                break
            conn.execute(COMPLETE, (ids,), prepare=True)
            done += len(ids)
        return done / (time.perf_counter() - started)


def three_step_rate(url: str, in_flight: int, tasks: int) -> float:
    """Three-step tasks per second when ``in_flight`` of them run in lockstep: each round
    commits one checkpoint of every task in flight in one statement (group commit at its
    best), and a task's next step waits for the commit of its previous one. ``tasks`` is
    rounded up to whole groups of ``in_flight``."""
    groups = max(1, -(-tasks // in_flight))
    with _connect(url) as conn:
        conn.execute(CHECKPOINTS_SETUP)
        # Ids of the shape pgtasks stores (36 characters), distinct for every task.
        id_groups = [
            [f"{group:08x}-0000-7000-8000-{task:012x}" for task in range(in_flight)]
            for group in range(groups)
        ]
        server_state.settle(url)
        started = time.perf_counter()
        for ids in id_groups:
            for step in range(1, STEPS + 1):
                conn.execute(CHECKPOINT_ROUND, (step, ids), prepare=True)
        rate = groups * in_flight / (time.perf_counter() - started)
        row = conn.execute("SELECT count(*) FROM raw_checkpoints").fetchone()
        conn.execute("DROP TABLE raw_checkpoints")
    expected = groups * in_flight * STEPS
    if row is None or row[0] != expected:
        raise RuntimeError(f"the three-step ceiling committed {row} checkpoints, not {expected}")
    return rate


def pgtasks_statement_rates(url: str, count: int) -> tuple[float, float]:
    """Rows per second of pgtasks' own enqueue statements into its own table, sent raw: the
    row pgtasks builds for a no-op task, prepared once, each with a fresh id (single rows in
    autocommit, then batches of 100). What a ``delay()`` or a bulk enqueue costs beyond this
    is pgtasks' Python."""
    from pgtasks import Client  # why: only this yardstick needs pgtasks' schema and statements
    from pgtasks.engine.ids import new_task_ids
    from pgtasks.engine.options import SendOptions, build_new_task
    from pgtasks.sysdb.dedup import enqueue_columns, single_task_params

    server_state.settle(url)
    schema_url = f"{url}?schema=raw_pgtasks_{time.time_ns()}"
    client = Client(schema_url)
    engine = client.engine
    engine.enqueue([SendOptions(queue="raw").request("bench.noop")])  # creates the schema
    sql = engine.database.sysdb.sql  # type: ignore[attr-defined]
    channel = engine.database.sysdb.channel  # type: ignore[attr-defined]
    template = build_new_task(SendOptions(queue="raw").request("bench.noop"), engine.codec, "raw", 100)
    with _connect(url) as conn:
        rows = [template._replace(task_id=task_id) for task_id in new_task_ids(count)]
        started = time.perf_counter()
        for row in rows:
            params = {**single_task_params(row), "channel": channel}
            conn.execute(sql["tasks_enqueue_one"], params, prepare=True)
        single = count / (time.perf_counter() - started)
        rows = [template._replace(task_id=task_id) for task_id in new_task_ids(count)]
        batches = [enqueue_columns(rows[i : i + BATCH]) for i in range(0, count, BATCH)]
        started = time.perf_counter()
        for columns in batches:
            # What a bulk enqueue of tasks with new ids sends (no conflict check).
            conn.execute(sql["tasks_enqueue_new"], {**columns, "channel": channel}, prepare=True)
        batched = count / (time.perf_counter() - started)
    client.close()
    server_state.drop_schema(schema_url)
    return single, batched
