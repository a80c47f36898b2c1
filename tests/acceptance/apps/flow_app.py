"""An application for the flow-control tests: each task writes its start and end time."""

from __future__ import annotations

import time

from pgtasks import App
from tests.support.ledger import append

app = App("flow", poll_interval=0.05)
app.queue("limited", concurrency=2)
app.queue("one_per_worker", worker_concurrency=1)
app.queue("rated", rate_limit=(3, 1.0))
app.queue("tenants", concurrency=1, partitioned=True)


def record(event: str, label: str) -> None:
    append(event, f"{time.time():.6f}", label)


@app.task(name="flow.work")
def work(label: str = "", seconds: float = 0.2) -> str:
    record("start", label)
    time.sleep(seconds)
    record("end", label)
    return label
