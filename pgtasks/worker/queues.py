"""What one worker knows about its queues: their stored limits and its own running counts."""

from __future__ import annotations

import logging
import threading
from dataclasses import fields

from pgtasks.engine.worker_api import WorkerApi
from pgtasks.sysdb.records import QueueClaim, QueueSettings, QueueUpsert

log = logging.getLogger("pgtasks.worker")


class QueueBook:
    """Settings of the consumed queues (refreshed from the ``queues`` table, so changes made
    at runtime reach a running worker) and how many tasks of each this worker runs now."""

    def __init__(self, store: WorkerApi, names: tuple[str, ...]) -> None:
        self._store = store
        self._names = names
        self._settings: dict[str, QueueSettings] = {}
        self._running = dict.fromkeys(names, 0)
        self._lock = threading.Lock()

    def declare(self, declared: dict[str, QueueSettings]) -> None:
        """Write the app's declared queues, and create rows for consumed queues that have none.

        A value an operator set (`pgtasks queue set`) stays unless the app's declared value
        of that column changed since its last declaration; a running value replaced here is
        logged."""
        before = {q.name: q for q in self._store.queues(tuple(declared))} if declared else {}
        for settings in declared.values():
            after = self._store.upsert_queue(QueueUpsert(settings, declared=True))
            old = before.get(settings.name)
            if old is not None and old != after:
                log.warning(
                    "queue %s: the app's declared settings replace the running ones: %s",
                    settings.name,
                    ", ".join(
                        f"{c}={getattr(old, c)!r}->{getattr(after, c)!r}"
                        for c in (f.name for f in fields(QueueSettings))
                        if getattr(old, c) != getattr(after, c)
                    ),
                )
        for name in self._names:
            if name not in declared:
                self._store.upsert_queue(QueueUpsert(QueueSettings(name), changed=frozenset()))
        self.refresh()

    def refresh(self) -> None:
        """Re-read the stored settings of the consumed queues."""
        fresh = {q.name: q for q in self._store.queues(self._names)}
        with self._lock:
            changed = [fresh[n] for n in self._names if n in fresh and fresh[n] != self._settings.get(n)]
            self._settings = fresh
        if changed:
            log.info("queue settings in force: %s", ", ".join(_describe(s) for s in changed))

    @property
    def names(self) -> tuple[str, ...]:
        """The queues consumed now."""
        with self._lock:
            return self._names

    def consume(self, name: str) -> bool:
        """Consume ``name`` too (Celery's ``add_consumer``); False if consumed already."""
        with self._lock:
            if name in self._names:
                return False
        self._store.upsert_queue(QueueUpsert(QueueSettings(name), changed=frozenset()))
        with self._lock:
            self._names = (*self._names, name)
            self._running.setdefault(name, 0)
        self.refresh()
        return True

    def stop_consuming(self, name: str) -> bool:
        """Stop claiming from ``name`` (Celery's ``cancel_consumer``); False if not consumed.
        Its running tasks finish."""
        with self._lock:
            if name not in self._names:
                return False
            self._names = tuple(n for n in self._names if n != name)
        return True

    def claims(self) -> tuple[QueueClaim, ...]:
        """One QueueClaim per consumed queue, with this worker's room under its own limit."""
        out = []
        with self._lock:
            for name in self._names:
                s = self._settings.get(name)
                if s is None:
                    out.append(QueueClaim(name))
                    continue
                room = None
                if s.worker_concurrency is not None:
                    room = max(0, s.worker_concurrency - self._running[name])
                period = None if s.rate_limit_period_sec is None else round(s.rate_limit_period_sec * 1000)
                out.append(QueueClaim(name, room, s.concurrency, s.rate_limit_max, period, s.partition_queue))
        return tuple(out)

    def unlimited(self) -> bool:
        """Whether no consumed queue has a limit (global or per-worker concurrency, a rate,
        partitions): then a worker may claim ahead of its free processes (prefetch)."""
        with self._lock:
            return all(
                s is not None
                and s.concurrency is None
                and s.worker_concurrency is None
                and s.rate_limit_max is None
                and not s.partition_queue
                for s in (self._settings.get(n) for n in self._names)
            )

    def globally_limited(self, queue: str) -> bool:
        """Whether ``queue`` has a global concurrency limit (a freed slot is news to others)."""
        with self._lock:
            s = self._settings.get(queue)
        return s is not None and s.concurrency is not None

    def started(self, queue: str, count: int = 1) -> None:
        with self._lock:
            self._running[queue] = self._running.get(queue, 0) + count

    def finished(self, queue: str) -> None:
        with self._lock:
            self._running[queue] = self._running.get(queue, 1) - 1


def _describe(s: QueueSettings) -> str:
    parts = [f"concurrency={s.concurrency}", f"worker_concurrency={s.worker_concurrency}"]
    if s.rate_limit_max is not None:
        parts.append(f"rate_limit={s.rate_limit_max}/{s.rate_limit_period_sec}s")
    if s.partition_queue:
        parts.append("partitioned")
    if s.paused:
        parts.append("paused")
    return f"{s.name}({', '.join(parts)})"
