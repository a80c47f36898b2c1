"""Failover while work is under way: a producer enqueues three-step tasks (ids chosen before the
insert) and two worker processes drain them, all through a multi-host URL naming a primary
and its streaming-replication standby. The primary is stopped (``-m immediate``), stays gone
for ``outage`` seconds, then the standby is promoted; the producer and the workers carry on.

    python -m tests.faults.failover [--async] [--outage 30]     (make failover runs both)

The report counts what the producer had acknowledged, what completed, what was lost or
duplicated, how often a step ran twice, and whether a worker exited.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from pgtasks import Client
from pgtasks.engine.errors import DatabaseUnavailable
from tests.support.processes import stop, worker_process
from tests.support.replication import ReplicatedPair

APP = "tests.acceptance.apps.durable_app"
TASK = "durable.three_steps"
LEASE_SECONDS = 5.0


@dataclass
class FailoverReport:
    synchronous: bool
    outage: float
    lag: float = 0.0
    acknowledged: int = 0
    completed: int = 0
    lost: list[str] = field(default_factory=list)
    wrong_results: list[str] = field(default_factory=list)
    duplicated: int = 0  # rows beyond one per task id the producer sent
    producer_errors: int = 0  # enqueues that raised (each retried with the same id)
    longest_enqueue: float = 0.0  # seconds one enqueue call took (the producer's wait)
    steps_twice: int = 0  # (task, step) pairs whose body ran twice
    steps_more: int = 0  # ... more than twice (never allowed)
    workers_exited: list[int] = field(default_factory=list)
    recovered_by_others: int = 0  # "recovered N tasks of executors whose lease expired"
    first_completion_after_promotion: float | None = None

    def summary(self) -> str:
        kind = "synchronous" if self.synchronous else "asynchronous"
        first = self.first_completion_after_promotion
        lagging = f" ({self.lag:g}s of replication lag when it died)" if self.lag else ""
        return (
            f"{kind} standby, primary gone {self.outage:g}s before the promotion{lagging}: "
            f"{self.acknowledged} acknowledged, {self.completed} completed, {len(self.lost)} lost, "
            f"{self.duplicated} duplicated, {len(self.wrong_results)} wrong results; "
            f"producer: {self.producer_errors} errors, longest enqueue {self.longest_enqueue:.1f}s; "
            f"steps run twice: {self.steps_twice} (more: {self.steps_more}); "
            f"workers exited: {len(self.workers_exited)}; tasks recovered from live workers: "
            f"{self.recovered_by_others}; first completion "
            f"{'-' if first is None else f'{first:.1f}s'} after the promotion"
        )


class Producer(threading.Thread):
    """Enqueues ``durable.three_steps(i)`` with id ``f-<i>`` about ``rate`` times a second; an
    enqueue that raises is retried with the same id (it may have committed)."""

    def __init__(self, client: Client, rate: float) -> None:
        super().__init__(name="failover-producer", daemon=True)
        self.client, self.pause = client, 1 / rate
        self.acknowledged: list[str] = []
        self.errors = 0
        self.longest = 0.0
        self.halt = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.halt.is_set():
            task_id = f"f-{i}"
            started = time.monotonic()
            try:
                self.client.enqueue(TASK, [i], task_id=task_id)
            except DatabaseUnavailable:
                self.errors += 1
                self.halt.wait(0.5)
                continue  # the same id again: an attempt that committed is found, not doubled
            self.longest = max(self.longest, time.monotonic() - started)
            self.acknowledged.append(task_id)
            i += 1
            self.halt.wait(self.pause)


def run(
    synchronous: bool = True,
    outage: float = 30.0,
    rate: float = 40.0,
    folder: Path | None = None,
    lag: float = 0.0,
) -> FailoverReport:
    """The scenario; returns its report (the servers and processes are gone afterwards).
    ``lag``: seconds during which the standby receives no WAL (its connection to the primary
    cut) just before the primary goes: the replication lag an asynchronous standby can have when
    its primary dies."""
    folder = folder or Path(tempfile.mkdtemp(prefix="pgtasks-failover-"))
    ledger = folder / "ledger"
    pair = ReplicatedPair(synchronous).start()
    url = f"{pair.url}&schema=failover"
    client = Client(url)
    logs = [folder / f"worker{n}.log" for n in range(2)]
    workers: list[subprocess.Popen[str]] = []
    producer = Producer(client, rate)
    report = FailoverReport(synchronous, outage, lag)
    try:  # from here on the servers and processes are stopped whatever happens
        client.list_tasks(limit=1)  # connects and migrates before the workers start
        for n, log in enumerate(logs):
            workers.append(
                worker_process(
                    url, ledger, f"fo-{n}", app=APP, concurrency=4, lease_seconds=LEASE_SECONDS, output=log
                )
            )
        producer.start()
        _wait_for_completions(client, 100)
        if lag:
            pair.detach_standby()
            time.sleep(lag)  # the lag itself: commits the standby does not receive
        pair.primary.stop("immediate")
        time.sleep(outage)  # the outage itself: nothing to wait for
        pair.promote()
        promoted_ms = time.time() * 1000
        time.sleep(5)  # the producer goes on against the new primary
        producer.halt.set()
        producer.join(120)
        report.acknowledged = len(producer.acknowledged)
        report.producer_errors, report.longest_enqueue = producer.errors, producer.longest
        _drain(client, producer.acknowledged, report)
        finished_after = [
            t.updated_at
            for t in client.list_tasks(status=["SUCCESS"], limit=100000)
            if t.updated_at >= promoted_ms
        ]
        if finished_after:
            report.first_completion_after_promotion = (min(finished_after) - promoted_ms) / 1000
        kept = set(producer.acknowledged) - set(report.lost)
        report.duplicated = len(client.list_tasks(limit=100000)) - len(kept)
        report.workers_exited = [w.returncode for w in workers if w.poll() is not None]
    finally:
        producer.halt.set()
        for worker in workers:
            stop(worker)
        client.close()
        pair.destroy()
    _count_steps(ledger, report)
    pattern = re.compile(r"recovered (\d+) tasks of executors whose lease expired")
    report.recovered_by_others = sum(int(m) for log in logs for m in pattern.findall(log.read_text()))
    return report


def _wait_for_completions(client: Client, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(client.list_tasks(status=["SUCCESS"], limit=count)) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {count} tasks completed before the failover")
        time.sleep(0.1)


def _drain(client: Client, acknowledged: list[str], report: FailoverReport, timeout: float = 180) -> None:
    """Wait for every acknowledged task to end; note those lost and those with a wrong result."""
    deadline = time.monotonic() + timeout
    for task_id in acknowledged:
        info = client.get_task(task_id)
        if info is None:
            report.lost.append(task_id)
            continue
        x = int(task_id.split("-")[1])
        try:
            value = client.AsyncResult(task_id).get(timeout=max(1.0, deadline - time.monotonic()))
        except Exception as exc:
            report.wrong_results.append(f"{task_id}: {type(exc).__name__}: {exc}")
            continue
        if value != (x + 1) * 2 - 3:
            report.wrong_results.append(f"{task_id}: {value!r}")
        else:
            report.completed += 1


def _count_steps(ledger: Path, report: FailoverReport) -> None:
    runs = collections.Counter(tuple(line.split()[:2]) for line in ledger.read_text().splitlines())
    report.steps_twice = sum(1 for n in runs.values() if n == 2)
    report.steps_more = sum(1 for n in runs.values() if n > 2)


def main() -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--async", dest="asynchronous", action="store_true", help="an asynchronous standby")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds without a primary")
    parser.add_argument("--lag", type=float, default=0.0, help="seconds of WAL the standby misses")
    args = parser.parse_args()
    print(run(not args.asynchronous, args.outage, lag=args.lag).summary(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
