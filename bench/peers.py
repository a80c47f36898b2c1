"""pgqueuer, the fastest Python queue on PostgreSQL we know of, measured in the same run as
pgtasks: on the same server, one process, through ``bench/pgqueuer_side.py`` in its own venv
(``.venv-pgqueuer``, made by ``make bench``; ``PGTASKS_PGQUEUER_PYTHON`` names another).

Each run gets a database of its own (pgqueuer's tables have fixed names), starts from a
checkpoint and drops its database at the end, as pgtasks' runs do with their schemas
(``bench/server_state.py``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench import server_state

REPO = Path(__file__).resolve().parents[1]
SIDE = REPO / "bench" / "pgqueuer_side.py"
DRAIN_BATCH_SIZES = (10, 100, 500)  # pgqueuer's batch_size: its best is reported


@dataclass(frozen=True)
class PeerFigures:
    enqueue_batched: float  # jobs/s, batches of 100
    enqueue_one_call: float  # jobs/s, all in one call
    enqueue_single: float  # jobs/s, one job per call from one producer
    drain: float  # jobs/s at the best batch size
    best_batch_size: int
    p50_ms: float
    p99_ms: float


def pgqueuer_python() -> str | None:
    """The venv's Python, if it has pgqueuer."""
    for candidate in (os.environ.get("PGTASKS_PGQUEUER_PYTHON"), str(REPO / ".venv-pgqueuer/bin/python")):
        if candidate and Path(candidate).exists():
            probe = subprocess.run([candidate, "-c", "import pgqueuer, asyncpg"], capture_output=True)
            if probe.returncode == 0:
                return candidate
    return None


def _fresh_database(server_url: str) -> str:
    name = f"pgq_{time.time_ns()}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = server_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}"


def _side(python: str, *args: str) -> dict[str, object]:
    done = subprocess.run([python, str(SIDE), *args], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"pgqueuer_side {args[0]} failed: {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _installed(python: str, server_url: str) -> str:
    dsn = _fresh_database(server_url)
    _side(python, "install", dsn)
    return dsn


def measure(python: str, server_url: str, count: int, runs: int, rate: float, seconds: float) -> PeerFigures:
    """Medians of ``runs``: batched enqueue (calls of 100, and one call of ``count``), single
    enqueue (a tenth of ``count`` single calls), drain at each batch size (the best kept),
    and the send-to-start wait at ``rate`` jobs/s for ``seconds``."""

    def run(shape: str, *args: str) -> dict[str, object]:
        dsn = _installed(python, server_url)
        try:
            server_state.settle(dsn)
            return _side(python, shape, dsn, *args)
        finally:
            server_state.drop_database(server_url, dsn)

    def seconds_of(shape: str, *args: str) -> float:
        value = run(shape, *args)["seconds"]
        assert isinstance(value, float)
        return value

    enqueue = statistics.median(count / seconds_of("enqueue", str(count), "100") for _ in range(runs))
    one_call = statistics.median(count / seconds_of("enqueue", str(count), str(count)) for _ in range(runs))
    single = statistics.median(count / 10 / seconds_of("enqueue", str(count // 10), "1") for _ in range(runs))
    drains = {
        size: statistics.median(count / seconds_of("drain", str(count), str(size)) for _ in range(runs))
        for size in DRAIN_BATCH_SIZES
    }
    best = max(drains, key=lambda size: drains[size])
    p50s, p99s = [], []
    for _ in range(runs):
        waits = run("latency", str(rate), str(seconds))["waits_ms"]
        assert isinstance(waits, list)
        ordered = sorted(float(w) for w in waits)
        p50s.append(statistics.median(ordered))
        p99s.append(ordered[int(len(ordered) * 0.99) - 1])
    return PeerFigures(
        enqueue, one_call, single, drains[best], best, statistics.median(p50s), statistics.median(p99s)
    )
