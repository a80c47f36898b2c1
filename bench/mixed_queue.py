"""A queue that mixes short and slow tasks, drained by two workers of ``-c 2``: a backlog of
no-op tasks followed by slow ones (``--slow`` tasks of ``--seconds``). Worker A drains the
backlog; worker B joins when A reaches the slow tasks (``late``) or is started with A before
the tasks are sent (``ready``). Prints, per pool, prefetch setting and case, how many slow
tasks each worker ran and how long the slow tasks took (the first slow one claimed to the
last one done; 30 x 0.3 s on four processes: 2.25 s at best).

    python -m bench.mixed_queue [--pools threads,prefork] [--runs 3] [--short 2000] [--slow 30]

PostgreSQL is a throwaway server started here (or PGTASKS_DATABASE_URL).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgtasks import Client
from pgtasks.engine.options import SendOptions
from pgtasks.sending import send_many
from pgtasks.sysdb.records import ListTasksParams, Status, TaskRecord
from tests.support.pgserver import PostgresServer
from tests.support.schemas import new_schema_name, with_schema

REPO = Path(__file__).resolve().parents[1]


def spawn(url: str, name: str, pool: str, multiplier: int | None, log: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "pgtasks", "worker", "-A", "bench.mixed_app", "-n", name, "-c", "2"]
    args += ["-P", pool, "-l", "INFO", "--poll-interval", "0.05"]
    if multiplier is not None:
        args += ["--prefetch-multiplier", str(multiplier)]
    env = {**os.environ, "PGTASKS_DATABASE_URL": url, "PYTHONPATH": str(REPO)}
    with log.open("a") as sink:
        return subprocess.Popen(args, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)


def tasks(client: Client, **where: Any) -> list[TaskRecord]:
    """The tasks (``where``: ListTasksParams' filters; all of them by default)."""
    return client.engine.database.sysdb.tasks_list(ListTasksParams(**{"limit": 100000, **where}))


def wait(predicate: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.01)


def one_run(
    server_url: str, pool: str, multiplier: int | None, case: str, args: argparse.Namespace
) -> dict[str, Any]:
    url = with_schema(server_url, new_schema_name("mixed_"))
    client = Client(url)
    client.engine.database.sysdb.migrate()
    log = Path(tempfile.mkdtemp()) / "workers.log"
    workers = {"A": spawn(url, "A", pool, multiplier, log)}
    if case == "ready":
        workers["B"] = spawn(url, "B", pool, multiplier, log)
        wait(lambda: log.exists() and log.read_text().count("ready.") >= 2, "two workers ready")
    else:
        wait(lambda: log.exists() and "ready." in log.read_text(), "worker A ready")
    sent = time.monotonic()
    send_many(client.engine, "mixed.noop", [()] * args.short, None, SendOptions(queue="default"))
    send_many(client.engine, "mixed.slow", [(args.seconds,)] * args.slow, None, SendOptions(queue="default"))

    def slow_claimed() -> bool:
        return any(t.executor_id for t in tasks(client, name="mixed.slow"))

    def all_done() -> bool:
        return not tasks(client, status=(Status.ENQUEUED, Status.PENDING), limit=1)

    wait(slow_claimed, "a slow task claimed")
    reached = time.monotonic()
    if case == "late":
        workers["B"] = spawn(url, "B", pool, multiplier, log)
    wait(all_done, "every task done")
    done = time.monotonic()
    for process in workers.values():
        process.terminate()
    for process in workers.values():
        process.wait(30)
    seen = tasks(client)
    slow = Counter(t.executor_id for t in seen if t.name == "mixed.slow")
    claims = Counter(t.claim_token for t in seen if t.name == "mixed.slow")
    client.close()
    return {
        "A": slow["A"],
        "B": slow["B"],
        "slow_s": round(done - reached, 2),
        "total_s": round(done - sent, 2),
        "largest_slow_claim": max(claims.values()),
        "attempts": sorted({t.recovery_attempts for t in seen}),
        "give_backs": log.read_text().count("gave back"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pools", default="threads,prefork")
    parser.add_argument("--cases", default="late,ready")
    parser.add_argument("--multipliers", default="default,4")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--short", type=int, default=2000)
    parser.add_argument("--slow", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=0.3)
    args = parser.parse_args()
    server = None
    server_url = os.environ.get("PGTASKS_DATABASE_URL")
    if not server_url:
        server = PostgresServer().start()
        server_url = server.url
    try:
        for pool in args.pools.split(","):
            for given in args.multipliers.split(","):
                multiplier = None if given == "default" else int(given)
                for case in args.cases.split(","):
                    runs = [one_run(server_url, pool, multiplier, case, args) for _ in range(args.runs)]
                    summary = {
                        "pool": pool,
                        "prefetch": given,
                        "case": case,
                        "B_slow": [r["B"] for r in runs],
                        "slow_s": [r["slow_s"] for r in runs],
                        "slow_s_median": statistics.median(r["slow_s"] for r in runs),
                        "total_s": [r["total_s"] for r in runs],
                        "largest_slow_claim": [r["largest_slow_claim"] for r in runs],
                        "attempts": sorted({a for r in runs for a in r["attempts"]}),
                        "give_backs": [r["give_backs"] for r in runs],
                    }
                    print(json.dumps(summary), flush=True)
    finally:
        if server is not None:
            server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
