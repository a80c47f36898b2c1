"""The yardsticks of `make bench` and the fleet bench, run small so that they cannot rot: the
raw SQL ceiling measures positive rates, a small fleet drains its backlog and reports its
connections and lock waits, and every measured run starts from a checkpoint and drops what
it created."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import psycopg
import pytest
from psycopg import sql

from bench import ceiling, server_state, throughput
from tests.support.processes import REPO
from tests.support.schemas import new_schema_name, with_schema, with_user


def test_the_raw_sql_ceiling_measures_each_yardstick(pg_server_url: str) -> None:
    single, batched = ceiling.insert_rates(pg_server_url, 300)
    own_single, own_batched = ceiling.pgtasks_statement_rates(pg_server_url, 300)
    drained_one = ceiling.drain_rate(pg_server_url, 100, 1)
    drained_many = ceiling.drain_rate(pg_server_url, 300, ceiling.BATCH)
    assert min(single, batched, own_single, own_batched, drained_one, drained_many) > 0


def test_the_three_step_ceiling_commits_every_checkpoint_and_drops_its_table(pg_server_url: str) -> None:
    # It checks its own count of committed checkpoints (3 per task, 7 tasks in 3 groups of 3).
    assert ceiling.three_step_rate(pg_server_url, 3, 7) > 0
    with psycopg.connect(pg_server_url) as conn:
        assert conn.execute("SELECT to_regclass('raw_checkpoints')").fetchone() == (None,)


def test_each_pool_shows_its_three_step_ceiling_beside_its_goal() -> None:
    rows = [
        throughput.Row("pgtasks / postgres prefork -c 2", noop=10_000, steps=500, in_flight=2),
        throughput.Row("pgtasks / postgres threads -c 32", noop=10_000, steps=1_000, in_flight=32),
        throughput.Row("pgtasks / sqlite threads -c 8", noop=5_000, steps=400, in_flight=8),
    ]
    ceilings = {
        2: throughput.Row("raw SQL, three commits a task, 2 in flight", steps=3_000),
        32: throughput.Row("raw SQL, three commits a task, 32 in flight", steps=30_000),
    }
    lines = throughput.targets(rows, throughput.Row("raw"), None, ceilings)
    by_pool = {(line[0].strip(), line[1]): line for line in lines}
    goal = by_pool[("3-step drain >= 0.4 x no-op drain, same pool", "500 (prefork -c 2)")]
    assert goal[3:] == ["0.05", "NO"]
    prefork = by_pool[("its ceiling: three commits a task alone, lockstep", "3,000 (2 in flight)")]
    assert prefork[2:] == ["10,000 no-op", "0.30", "0.4 out of reach"]
    threads = by_pool[("its ceiling: three commits a task alone, lockstep", "30,000 (32 in flight)")]
    assert threads[3:] == ["3.00", "0.4 reachable"]
    assert not any("sqlite" in line[1] for line in lines)


def test_a_small_fleet_drains_and_reports_connections_and_lock_waits(pg_server_url: str) -> None:
    argv = [sys.executable, "-m", "bench.fleet", "--workers", "2", "--concurrency", "2", "--tasks", "400"]
    env = {**os.environ, "PGTASKS_DATABASE_URL": pg_server_url}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^drained 400 tasks at [\d,]+ tasks/s", done.stdout, re.MULTILINE), done.stdout
    connections = re.search(r"^connections: (\d+) at most", done.stdout, re.MULTILINE)
    assert connections and 2 <= int(connections.group(1)) <= 2 * (2 + 4), done.stdout
    assert re.search(r"^lock waits: \d+ of \d+ active backend samples", done.stdout, re.MULTILINE)


def test_a_drain_measures_its_tasks_and_leaves_no_schema_behind(pg_server_url: str) -> None:
    schema = new_schema_name("bench_")
    rate = throughput.drain(with_schema(pg_server_url, schema), "bench.noop", 200, 4, "threads")
    assert rate > 0
    with psycopg.connect(pg_server_url) as conn:
        left = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    assert left is None


def test_each_run_starts_from_a_checkpoint(pg_server_url: str) -> None:
    # The control file's last checkpoint is written before the CHECKPOINT returns (the
    # statistics views are updated by the checkpointer after it, a race to read them).
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        before = conn.execute("SELECT checkpoint_lsn::text FROM pg_control_checkpoint()").fetchone()
        assert before is not None
        assert server_state.settle(pg_server_url) is True
        moved = conn.execute(
            "SELECT checkpoint_lsn > %s::pg_lsn FROM pg_control_checkpoint()", (before[0],)
        ).fetchone()
    assert moved == (True,)


def test_a_role_that_may_not_checkpoint_runs_without_one_and_says_so_once(
    pg_server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    role = new_schema_name("bench_role_")
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        url = with_user(pg_server_url, role)
        assert server_state.settle(url) is False
        assert server_state.settle(url) is False
        said = capsys.readouterr().out
        assert said.count("runs start without a CHECKPOINT") == 1, said
        assert "pg_checkpoint" in said or "permission denied" in said, said
    finally:
        server_state._refused.clear()
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_a_peer_run_drops_its_database(pg_server_url: str) -> None:
    name = new_schema_name("bench_db_")
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = pg_server_url.partition("?")[0].rsplit("/", 1)[0] + f"/{name}"
    idle = psycopg.connect(dsn)  # a session left open, as a killed run would leave
    try:
        server_state.drop_database(pg_server_url, dsn)
    finally:
        idle.close()
    with psycopg.connect(pg_server_url) as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None
