"""A worker running on a thread of the test process, for engine-level tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pgtasks import App
from pgtasks.worker import Worker, WorkerOptions
from pgtasks.worker.pruner import PRUNE_INTERVAL


@contextmanager
def running_worker(
    app: App,
    queues: tuple[str, ...] = ("default",),
    concurrency: int = 4,
    executor_id: str = "w-test",
    prune_interval: float = PRUNE_INTERVAL,
    prefetch_multiplier: int | None = None,
) -> Iterator[Worker]:
    options = WorkerOptions(
        queues=queues,
        concurrency=concurrency,
        executor_id=executor_id,
        prune_interval=prune_interval,
        pool="threads",  # the test process does not fork
        prefetch_multiplier=prefetch_multiplier,
    )
    worker = Worker(app.engine, options)
    worker.start()
    thread = threading.Thread(target=worker.run, name=f"run-{executor_id}", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.shutdown(grace=10)
        thread.join(10)


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)
