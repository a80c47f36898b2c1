"""The load test's summary: rates and latencies, and the invariant check.

Enqueue latency comes from locust's own statistics (as the producers' process wrote them when the
run stopped), per producer shape. Start and completion latency
come from where each task was stored: for pgtasks the rows (``created_at``,
``started_at_epoch_ms``, ``updated_at``, all on the database clock); for Celery the marks its
tasks leave in Redis, against the time the producer sent them.

The invariant: every acknowledged enqueue reached exactly one terminal state, no task is
there that nobody sent, and no step body ran twice, except for tasks that a fault touched
(then at most twice).
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from pathlib import Path

TERMINAL = frozenset({"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def read_acks(folder: Path, backend: str) -> tuple[dict[str, float], set[str]]:
    """Acknowledged task ids with the time they were sent (seconds since the epoch), and the
    ids sent but never acknowledged (the enqueue failed, or locust stopped its producer)."""
    acked: dict[str, float] = {}
    sent: set[str] = set()
    for path in folder.glob(f"acked-{backend}-*.txt"):
        for line in path.read_text().splitlines():
            task_id, at, what = line.split(" ")
            if what == "ack":
                acked[task_id] = float(at)
            else:
                sent.add(task_id)
    return acked, sent - set(acked)


def read_effects(folder: Path) -> collections.Counter[tuple[str, str]]:
    """How many times each (task id, step) body ran, over every worker's ledger."""
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for path in folder.glob("effects-*.log"):
        for line in path.read_text().splitlines():
            task_id, _, step = line.partition(" ")
            counts[(task_id, step)] += 1
    return counts


@dataclass
class RequestStats:
    """Locust's figures for one request name (or ``Aggregated``), in ms."""

    requests: int = 0
    failures: int = 0
    p50: float = 0.0
    p95: float = 0.0
    p99: float = 0.0

    def latency(self) -> str:
        return f"{self.p50:.0f} / {self.p95:.0f} / {self.p99:.0f} ms"


def read_locust_stats(folder: Path) -> dict[str, RequestStats]:
    """Locust's statistics by request name (``delay``, ``burst of 100``, ..., ``Aggregated``),
    from the file the locustfile writes when the run stops; empty when it did not."""
    path = folder / "locust-final.json"
    if not path.exists():
        return {}
    final = json.loads(path.read_text())
    return {
        name: RequestStats(
            int(e["requests"]), int(e["failures"]), float(e["p50"]), float(e["p95"]), float(e["p99"])
        )
        for name, e in final.items()
    }


@dataclass
class TaskTimes:
    """One task as stored: its final state and when it was sent, started and finished (s)."""

    name: str
    status: str
    sent: float
    started: float | None
    finished: float | None


@dataclass
class Summary:
    """Everything the driver prints for one backend."""

    backend: str
    seconds: float
    requests: dict[str, RequestStats]
    tasks: dict[str, TaskTimes]
    acked: dict[str, float]
    in_flight: set[str]  # sent, never acknowledged: may exist or not
    effects: collections.Counter[tuple[str, str]]
    faulted: bool
    drain_seconds: float
    problems: list[str] = field(default_factory=list)

    def check(self, steps_of: set[str]) -> list[str]:
        """The invariant; ``steps_of`` are the acknowledged tasks that have two steps."""
        problems = []
        missing = [i for i in self.acked if i not in self.tasks]
        if missing:
            problems.append(f"{len(missing)} acknowledged tasks are missing, e.g. {missing[:3]}")
        unfinished = [i for i in self.acked if i in self.tasks and self.tasks[i].status not in TERMINAL]
        if unfinished:
            problems.append(f"{len(unfinished)} tasks did not finish, e.g. {unfinished[:3]}")
        failed = [i for i, t in self.tasks.items() if t.status != "SUCCESS" and i in self.acked]
        if failed:
            problems.append(f"{len(failed)} tasks did not succeed, e.g. {failed[:3]}")
        unexpected = [i for i in self.tasks if i not in self.acked and i not in self.in_flight]
        if unexpected:
            problems.append(f"{len(unexpected)} tasks nobody acknowledged, e.g. {unexpected[:3]}")
        allowed = 2 if self.faulted else 1
        for task_id in steps_of:
            for step in ("1", "2"):
                ran = self.effects.get((task_id, step), 0)
                done = task_id in self.tasks and self.tasks[task_id].status == "SUCCESS"
                if (done and ran < 1) or ran > allowed:
                    problems.append(f"step {step} of {task_id} ran {ran} times (allowed 1..{allowed})")
        self.problems = problems
        return problems

    def lines(self) -> list[str]:
        done = [t for t in self.tasks.values() if t.status in TERMINAL]
        starts = [(t.started - t.sent) * 1000 for t in done if t.started is not None]
        ends = [(t.finished - t.sent) * 1000 for t in done if t.finished is not None]
        first = min((t.sent for t in self.tasks.values()), default=0.0)
        last = max((t.finished or 0.0 for t in done), default=first)
        rate = len(done) / (last - first) if last > first else 0.0
        twice = sum(1 for n in self.effects.values() if n > 1)
        verdict = "PASSED" if not self.problems else "FAILED: " + "; ".join(self.problems[:5])
        total = self.requests.get("Aggregated", RequestStats())
        delay = self.requests.get("delay", RequestStats())
        burst = self.requests.get("burst of 100", RequestStats())
        waited = self.requests.get("delay and wait", RequestStats())
        return [
            f"tasks enqueued (acknowledged)  {len(self.acked):,}",
            f"tasks completed                {sum(1 for t in done if t.status == 'SUCCESS'):,}",
            f"tasks sent, not acknowledged   {sum(1 for i in self.tasks if i in self.in_flight):,} "
            f"of {len(self.in_flight):,}",
            f"enqueue requests / failures    {total.requests:,} / {total.failures:,}",
            f"enqueue tasks/s                {len(self.acked) / self.seconds:,.0f}",
            f"completion tasks/s             {rate:,.0f}",
            f"delay() p50/p95/p99            {delay.latency()}",
            f"burst of 100 p50/p95/p99       {burst.latency()}",
            f"delay+wait result p50/p95/p99  {waited.latency()}",
            f"start latency p50/p95/p99      {_ms(starts)}",
            f"completion latency p50/p95/p99 {_ms(ends)}",
            f"drain after the run            {self.drain_seconds:.1f} s",
            f"step bodies run twice          {twice}" + (" (a fault was injected)" if self.faulted else ""),
            f"invariant check                {verdict}",
        ]


def _ms(values: list[float]) -> str:
    return " / ".join(f"{percentile(values, q):.0f}" for q in (0.5, 0.95, 0.99)) + " ms"
