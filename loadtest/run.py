"""``make loadtest``: PostgreSQL, W workers, locust headless for T seconds with U users, a
drain, and one summary with the invariant check. Exits 1 if the invariant fails.

    python -m loadtest.run [--workers 2] [--time 30] [--users 20] [--mix 6:2:2]
                           [--concurrency 8] [--fault none|kill|pg-restart] [--celery]
                           [--out loadtest-out]

Uses ``PGTASKS_DATABASE_URL`` when set, else starts a throwaway PostgreSQL (fsync on). The
locust HTML report and CSV files go to ``--out``. ``--fault kill`` kills one worker with
SIGKILL half-way through; ``--fault pg-restart`` also restarts PostgreSQL (``-m immediate``)
at that moment (only with the throwaway server). ``--celery`` runs the same producers
against Celery on Redis afterwards (needs ``redis-server`` and ``make celery-env``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg

from bench.throughput import celery_python
from loadtest.report import Summary, TaskTimes, read_acks, read_effects, read_locust_stats
from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]
DRAIN_TIMEOUT = 300.0


def start_worker(url: str, n: int, args: argparse.Namespace, ledger: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "pgtasks", "worker", "-A", "loadtest.app", "-Q", "loadtest"]
    argv += ["-c", str(args.concurrency), "-P", "threads", "-n", f"lt-{n}-{uuid.uuid4().hex[:6]}"]
    argv += ["--lease-seconds", "2", "-l", "WARNING"]
    env = {**os.environ, "PGTASKS_DATABASE_URL": url, "LOADTEST_LEDGER_DIR": str(ledger)}
    with (ledger / f"worker-{n}.out").open("ab") as out:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def run_locust(python: str, env: dict[str, str], args: argparse.Namespace, prefix: Path) -> None:
    argv = [python, "-m", "locust", "-f", str(REPO / "loadtest" / "locustfile.py"), "--headless"]
    argv += ["-u", str(args.users), "-r", str(max(1, args.users // 2)), "-t", f"{args.time}s"]
    argv += ["--csv", str(prefix), "--html", f"{prefix}.html", "--only-summary", "--stop-timeout", "10"]
    argv += ["--loglevel", "WARNING"]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=args.time + 120)
    if done.returncode not in (0, 1):  # 1: some requests failed, which the summary reports
        raise RuntimeError(f"locust failed ({done.returncode}): {done.stderr[-2000:]}")


def pgtasks_times(url: str, schema: str) -> dict[str, TaskTimes]:
    dsn = url.split("?")[0]
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT workflow_uuid, name, status, created_at, started_at_epoch_ms, updated_at "
            f'FROM "{schema}".workflow_status'
        ).fetchall()
    return {r[0]: TaskTimes(r[1], r[2], r[3] / 1000, _seconds(r[4]), r[5] / 1000) for r in rows}


def _seconds(epoch_ms: int | None) -> float | None:
    return None if epoch_ms is None else epoch_ms / 1000


def drain(check: Callable[[], bool], timeout: float = DRAIN_TIMEOUT) -> float:
    """Poll ``check`` until it holds; return how long that took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"the queue did not drain in {timeout:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - start


def run_pgtasks(args: argparse.Namespace, out: Path) -> Summary:
    server = None if os.environ.get("PGTASKS_DATABASE_URL") else PostgresServer(fsync=True).start()
    base = os.environ.get("PGTASKS_DATABASE_URL") or (server.url if server else "")
    schema = f"loadtest_{uuid.uuid4().hex[:8]}"
    url = base + ("&" if "?" in base else "?") + f"schema={schema}"
    work = out / "pgtasks"
    work.mkdir(parents=True, exist_ok=True)
    for old in [*work.glob("acked-*"), *work.glob("effects-*"), *work.glob("locust-final.json")]:
        old.unlink()
    workers: list[subprocess.Popen[bytes]] = []
    try:
        from pgtasks import Client

        Client(url).engine.admin.migrate()
        workers = [start_worker(url, n, args, work) for n in range(args.workers)]
        env = {**os.environ, "PGTASKS_DATABASE_URL": url, "LOADTEST_ACK_DIR": str(work)}
        env |= {"LOADTEST_MIX": args.mix, "PYTHONPATH": str(REPO)}
        fault = threading.Timer(args.time / 2, inject_fault, (args.fault, workers, server))
        fault.daemon = True
        if args.fault != "none":
            fault.start()
        started = time.monotonic()
        run_locust(sys.executable, env, args, work / "locust")
        seconds = time.monotonic() - started
        fault.cancel()
        acked, in_flight = read_acks(work, "pgtasks")

        def finished() -> bool:
            times = pgtasks_times(url, schema)
            return all(i in times and times[i].status in ("SUCCESS", "ERROR", "CANCELLED") for i in acked)

        drained = drain(finished)
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(60)
        summary = Summary(
            "pgtasks",
            seconds,
            read_locust_stats(work),
            pgtasks_times(url, schema),
            acked,
            in_flight,
            read_effects(work),
            args.fault != "none",
            drained,
        )
        summary.check({i for i, t in summary.tasks.items() if t.name == "loadtest.work" and i in acked})
        return summary
    finally:
        for worker in workers:  # after a failure, nothing may keep running
            if worker.poll() is None:
                worker.kill()
                worker.wait(30)
        if server is not None:
            server.destroy()
        else:  # a server of the user's: leave nothing behind
            with psycopg.connect(base.split("?")[0], autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def inject_fault(kind: str, workers: list[subprocess.Popen[bytes]], server: PostgresServer | None) -> None:
    """Kill one worker with SIGKILL; with ``pg-restart``, restart PostgreSQL too."""
    print(f"fault: kill -9 worker pid {workers[0].pid}", flush=True)
    workers[0].kill()
    if kind == "pg-restart" and server is not None:
        print("fault: PostgreSQL stopped (-m immediate) and started again", flush=True)
        server.stop("immediate")
        server.launch()


def run_celery(args: argparse.Namespace, out: Path) -> Summary | None:
    """The same producers against Celery on Redis, if both are installed."""
    from loadtest.celery_side import run

    python = celery_python()
    if python is None or subprocess.run(["which", "redis-server"], capture_output=True).returncode:
        print("celery comparison skipped: install redis-server and run `make celery-env`", flush=True)
        return None
    return run(python, args, out / "celery", run_locust)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loadtest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time", type=int, default=30, help="seconds of load")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--mix", default="6:2:2", help="weights delay:burst:wait")
    parser.add_argument("--concurrency", type=int, default=8, help="threads per worker")
    parser.add_argument("--fault", choices=("none", "kill", "pg-restart"), default="none")
    parser.add_argument("--celery", action="store_true", help="also run the producers against Celery")
    parser.add_argument("--out", type=Path, default=REPO / "loadtest-out")
    args = parser.parse_args(argv)
    if args.workers < 1 or (args.fault != "none" and args.workers < 2):
        parser.error("--workers must be >= 1, and >= 2 with a fault (one survives to recover)")
    summaries = [run_pgtasks(args, args.out)]
    if args.celery:
        celery = run_celery(args, args.out)
        if celery is not None:
            summaries.append(celery)
    print_summaries(args, summaries)
    return 0 if all(not s.problems for s in summaries) else 1


def print_summaries(args: argparse.Namespace, summaries: list[Summary]) -> None:
    print(
        f"\nload test: {args.workers} workers x {args.concurrency} threads, {args.users} users, "
        f"{args.time} s, mix delay:burst:wait {args.mix}, fault {args.fault}"
    )
    columns = [s.lines() for s in summaries]
    header = "".join(f"{s.backend:>44}" for s in summaries)
    print(f"{'':31}{header}")
    for row in zip(*columns, strict=True):
        label = row[0][:31]
        print(label + "".join(f"{cell[31:]:>44}" for cell in row))
    print(f"locust reports: {args.out}/*/locust.html")


if __name__ == "__main__":
    raise SystemExit(main())
