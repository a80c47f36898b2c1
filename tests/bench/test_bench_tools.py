"""The yardsticks of `make bench` and the fleet bench, run small so that they cannot rot: the
raw SQL ceiling measures positive rates, and a small fleet drains its backlog and reports its
connections and lock waits."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from bench import ceiling
from tests.support.processes import REPO


def test_the_raw_sql_ceiling_measures_each_yardstick(pg_server_url: str) -> None:
    single, batched = ceiling.insert_rates(pg_server_url, 300)
    own_single, own_batched = ceiling.pgtasks_statement_rates(pg_server_url, 300)
    drained_one = ceiling.drain_rate(pg_server_url, 100, 1)
    drained_many = ceiling.drain_rate(pg_server_url, 300, ceiling.BATCH)
    assert min(single, batched, own_single, own_batched, drained_one, drained_many) > 0


def test_a_small_fleet_drains_and_reports_connections_and_lock_waits(pg_server_url: str) -> None:
    argv = [sys.executable, "-m", "bench.fleet", "--workers", "2", "--concurrency", "2", "--tasks", "400"]
    env = {**os.environ, "PGTASKS_DATABASE_URL": pg_server_url}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^drained 400 tasks at [\d,]+ tasks/s", done.stdout, re.MULTILINE), done.stdout
    connections = re.search(r"^connections: (\d+) at most", done.stdout, re.MULTILINE)
    assert connections and 2 <= int(connections.group(1)) <= 2 * (2 + 4), done.stdout
    assert re.search(r"^lock waits: \d+ of \d+ active backend samples", done.stdout, re.MULTILINE)
