"""The prefork pool's hand-off alone, without a database: this process submits no-op tasks
to a ``PreforkPool`` of two children, keeping as many in hand as a prefork worker's prefetch
(``-c 2 x 4``), and prints the rate and the CPU per task of this process (the parent's side:
submit, the monitor, the finish callback) and of the children (theirs, with the fork server).

    python -m bench.prefork_handoff [--tasks 20000] [--in-hand 8]

Run it with ``PYTHONPATH`` pointing at another checkout to compare two versions of the pool.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time

from pgtasks.engine.core import Engine
from pgtasks.engine.registry import TaskDefinition
from pgtasks.engine.settings import Settings
from pgtasks.sysdb.records import Outcome, Status, TaskRecord
from pgtasks.worker.pools import PoolOptions
from pgtasks.worker.prefork import PreforkPool


def _noop() -> None:
    return None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--in-hand", type=int, default=8, help="tasks submitted and not finished, at most")
    args = parser.parse_args()
    # No database is opened: the tasks have no steps, and none waits long enough to be checked.
    engine = Engine(Settings(database_url=f"sqlite:///{tempfile.mkdtemp()}/unused.sqlite3"))
    engine.registry.add(TaskDefinition("noop", _noop))
    room = threading.Semaphore(args.in_hand)
    done = threading.Event()
    failed: list[Outcome | None] = []
    count = 0

    def finish(record: TaskRecord, outcome: Outcome | None) -> None:
        nonlocal count
        if outcome is None or outcome.status is not Status.SUCCESS:
            failed.append(outcome)
        count += 1
        room.release()
        if count == args.tasks:
            done.set()

    pool = PreforkPool(engine, "bench", PoolOptions("prefork", 2), finish)
    pool.start()
    records = [
        TaskRecord(
            f"{i:036d}", Status.PENDING, "noop", '{"args": [], "kwargs": {}}', "json", "q", claim_token="t"
        )
        for i in range(args.tasks)
    ]
    cpu, wall = time.process_time(), time.perf_counter()
    for record in records:
        room.acquire()
        pool.submit(record, [])
    done.wait()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    pool.shutdown(wait=True)  # the children and the fork server reaped: their CPU is counted
    children = os.times().children_user + os.times().children_system
    print(
        json.dumps(
            {
                "rate": round(args.tasks / wall),
                "parent_us_per_task": round(cpu / args.tasks * 1e6, 1),
                "children_us_per_task": round(children / args.tasks * 1e6, 1),
                "not_successful": len(failed),
                "load": os.getloadavg()[0],
            }
        )
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
