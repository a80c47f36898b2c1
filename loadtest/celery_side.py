"""The Celery half of ``make loadtest --celery``: Redis, Celery workers, the same locust
producers (run by the Celery venv's Python), a drain and the same summary.

``python -m loadtest.celery_side marks`` (in the Celery venv) prints the start and end marks
the tasks left in Redis, as JSON: the pgtasks venv has no Redis client.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from loadtest.report import Summary, TaskTimes, read_acks, read_effects, read_locust_stats

REPO = Path(__file__).resolve().parents[1]


def run(
    python: str,
    args: argparse.Namespace,
    work: Path,
    run_locust: Callable[[str, dict[str, str], argparse.Namespace, Path], None],
) -> Summary:
    """One load test against Celery: the arguments of the pgtasks run, the same producers."""
    from bench.celery_side import start_redis, stop
    from loadtest.run import drain

    work.mkdir(parents=True, exist_ok=True)
    for old in [*work.glob("acked-*"), *work.glob("effects-*"), *work.glob("locust-final.json")]:
        old.unlink()
    server, url, _ = start_redis()
    env = {**os.environ, "LOADTEST_REDIS_URL": url, "LOADTEST_LEDGER_DIR": str(work)}
    env |= {"LOADTEST_ACK_DIR": str(work), "LOADTEST_BACKEND": "celery", "LOADTEST_MIX": args.mix}
    env["PYTHONPATH"] = str(REPO)
    workers = []
    try:
        for n in range(args.workers):
            argv = [python, "-m", "celery", "-A", "loadtest.celery_app", "worker", "-P", "threads"]
            argv += ["-c", str(args.concurrency), "-Q", "loadtest", "-l", "WARNING", "-n", f"lt{n}@%h"]
            argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
            with (work / f"worker-{n}.out").open("ab") as out:
                workers.append(
                    subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
                )
        started = time.monotonic()
        run_locust(python, env, args, work / "locust")
        seconds = time.monotonic() - started
        acked, in_flight = read_acks(work, "celery")

        def all_marked() -> bool:
            _, ends = _marks(python, env)
            return all(i in ends for i in acked)

        drained = drain(all_marked)
        starts, ends = _marks(python, env)
    finally:
        for worker in workers:
            stop(worker)  # type: ignore[arg-type]
        server.terminate()
        server.wait(30)
    tasks = {
        i: TaskTimes("loadtest", "SUCCESS", acked.get(i, starts[i]), starts[i], ends[i])
        for i in ends
        if i in starts
    }
    effects = read_effects(work)
    stats = read_locust_stats(work)
    summary = Summary("celery", seconds, stats, tasks, acked, in_flight, effects, False, drained)
    summary.check({task_id for task_id, _ in effects})
    return summary


def _marks(python: str, env: dict[str, str]) -> tuple[dict[str, float], dict[str, float]]:
    done = subprocess.run(
        [python, "-m", "loadtest.celery_side", "marks"], cwd=REPO, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    data = json.loads(done.stdout)
    return data["start"], data["end"]


def print_marks() -> None:
    import redis

    marks = redis.Redis.from_url(os.environ["LOADTEST_REDIS_URL"])
    found = {
        key: {k.decode(): float(v) for k, v in marks.hgetall(f"lt:{key}").items()} for key in ("start", "end")
    }
    print(json.dumps(found))


if __name__ == "__main__":
    if sys.argv[1:] == ["marks"]:
        print_marks()
