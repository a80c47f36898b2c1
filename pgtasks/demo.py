"""``pgtasks demo``: a small durable workload on the embedded SQLite database.

Twelve orders, each a task of three checkpointed steps; the payment step fails transiently
on some orders and is retried. A worker runs in this process while progress is shown, then a
table of the results is printed.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from pgtasks.app import App
from pgtasks.sysdb.urls import parse_database_url
from pgtasks.worker.worker import Worker, WorkerOptions

DEMO_QUEUE = "demo"
DEMO_FILE = "pgtasks-demo.sqlite3"  # the only file the demo deletes before it starts


def build_demo_app(database_url: str) -> tuple[App, Any, dict[str, int]]:
    """The demo application, its order task, and a counter of payment tries per order."""
    app = App("demo", database_url=database_url, default_queue=DEMO_QUEUE, poll_interval=0.05)
    payment_tries: dict[str, int] = {}
    lock = threading.Lock()

    @app.step
    def reserve_stock(order_id: int) -> dict[str, Any]:
        time.sleep(0.02)
        return {"order": order_id, "reserved": 1 + order_id % 3}

    @app.step(retries=3, backoff=0.05)
    def charge_card(order_id: int, amount: float) -> str:
        with lock:
            tries = payment_tries[str(order_id)] = payment_tries.get(str(order_id), 0) + 1
        if order_id % 4 == 0 and tries == 1:
            raise ConnectionError(f"payment gateway timed out for order {order_id}")
        time.sleep(0.02)
        return f"ch_{order_id:04d}"

    @app.step
    def ship(order_id: int, items: int) -> str:
        time.sleep(0.02)
        return f"PKG-{order_id:04d}-{items}"

    @app.task(name="demo.process_order")
    def process_order(order_id: int) -> dict[str, Any]:
        stock = reserve_stock(order_id)
        charge = charge_card(order_id, 9.5 * stock["reserved"])
        parcel = ship(order_id, stock["reserved"])
        return {"charge": charge, "parcel": parcel}

    return app, process_order, payment_tries


def run_demo(database_url: str, count: int = 12, out: Any = None) -> int:
    """Run the demo; 0 when every order succeeded."""
    out = out or sys.stdout
    target = parse_database_url(database_url)
    if target.dialect == "sqlite" and Path(target.sqlite_path).name == DEMO_FILE:
        for suffix in ("", "-wal", "-shm"):  # start from an empty demo database each time
            Path(target.sqlite_path + suffix).unlink(missing_ok=True)
    app, process_order, payment_tries = build_demo_app(database_url)
    print(f"pgtasks demo on {target.display_url}: {count} orders, 3 durable steps each", file=out)
    handles = [process_order.delay(order_id) for order_id in range(1, count + 1)]
    options = WorkerOptions(queues=(DEMO_QUEUE,), concurrency=4, executor_id="demo-worker", pool="threads")
    worker = Worker(app.engine, options)  # on a thread of this process, beside the progress bar
    worker.start()
    runner = threading.Thread(target=worker.run, name="demo-worker", daemon=True)
    runner.start()
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline:
        done = sum(1 for h in handles if h.ready())
        bar = "#" * (20 * done // count)
        print(f"\r  progress [{bar:20}] {done}/{count} done", end="", file=out, flush=True)
        if done == count:
            break
        time.sleep(0.1)
    print(file=out)
    worker.shutdown(grace=10)
    print(f"\n  {'order':>5}  {'status':8}  {'steps':>5}  {'payment tries':>13}  result", file=out)
    ok = 0
    for order_id, handle in enumerate(handles, start=1):
        info = app.get_task(handle.id)
        status = info.status.value if info else "?"
        steps = len(info.steps or ()) if info else 0
        result = handle.get(timeout=1) if status == "SUCCESS" else (info.error_summary if info else "")
        ok += status == "SUCCESS"
        tries = payment_tries.get(str(order_id), 0)
        print(f"  {order_id:>5}  {status:8}  {steps:>5}  {tries:>13}  {result}", file=out)
    print(
        f"\n  {ok}/{count} orders succeeded; every step's result is checkpointed in {target.display_url}",
        file=out,
    )
    app.close()
    return 0 if ok == count else 1
