"""Celery 5 on Redis, measured the way bench.throughput measures pgtasks. Run with the
Python of a separate venv that has Celery and the redis client; prints one JSON object.

    .venv-celery/bin/python -m bench.celery_side --tasks 20000 --pool prefork --concurrency 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis() -> tuple[subprocess.Popen[bytes], str, str]:
    folder = tempfile.mkdtemp(prefix="pgtasks-bench-redis-")
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            folder,
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    return server, f"redis://127.0.0.1:{port}/0", folder


def wait_until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.01)


def start_worker(url: str, pool: str, concurrency: int) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "bench.celery_app",
        "worker",
        "-P",
        pool,
        "-c",
        str(concurrency),
    ]
    argv += [
        "-l",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        f"bench{time.time_ns()}@%h",
    ]
    env = {**os.environ, "BENCH_REDIS_URL": url}
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--pool", default="prefork")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        print(json.dumps({"error": "redis-server is not installed"}))
        return 0
    server, url, folder = start_redis()
    os.environ["BENCH_REDIS_URL"] = url
    try:
        import redis

        marks = redis.Redis.from_url(url)
        wait_until(lambda: _pings(marks), 20, "redis-server did not start")
        from bench.celery_app import noop

        # enqueue: single delay() calls from one producer, no worker running
        started = time.perf_counter()
        for _ in range(args.tasks):
            noop.delay()
        enqueue = args.tasks / (time.perf_counter() - started)
        # drain: one worker process empties the queue
        worker = start_worker(url, args.pool, args.concurrency)
        try:
            wait_until(lambda: int(marks.get("bench:done") or 0) >= args.tasks, 900, "drain did not finish")
        finally:
            stop(worker)
        first, last = float(marks.get("bench:first")), float(marks.get("bench:last"))  # type: ignore[arg-type]
        drain = args.tasks / max(last - first, 1e-3)
        # latency: a steady offered load to an idle worker
        marks.flushdb()
        worker = start_worker(url, args.pool, args.concurrency)
        try:
            noop.delay()
            wait_until(lambda: int(marks.get("bench:done") or 0) >= 1, 60, "worker did not start")
            total = int(args.rate * args.seconds)
            begin = time.perf_counter()
            for i in range(total):
                pause = begin + i / args.rate - time.perf_counter()  # pacing the offered load
                if pause > 0:
                    time.sleep(pause)
                noop.delay(time.time())
            wait_until(
                lambda: int(marks.get("bench:done") or 0) >= total + 1, 120, "latency run did not finish"
            )
        finally:
            stop(worker)
        waits = sorted(float(w) for w in marks.lrange("bench:waits", 0, -1))
        result = {
            "enqueue": enqueue,
            "drain": drain,
            "p50": statistics.median(waits),
            "p99": waits[int(len(waits) * 0.99) - 1],
        }
        print(json.dumps(result))
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _pings(marks: object) -> bool:
    try:
        return bool(marks.ping())  # type: ignore[attr-defined]
    except Exception:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
