"""Retention: deleting finished tasks (with their steps, events, notifications and links)
in small batches, and one finished task at once (``forget``). The rules are in the
``tasks_prune_pick`` / ``task_forget_pick`` statements: dead letters and tasks a canvas still
needs are never picked."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pgtasks.sysdb.primitives import Primitives


class RetentionStore(Primitives):
    """``tasks_prune``, ``tasks_prunable`` and ``task_forget`` over the dialect's primitives."""

    def tasks_prune(
        self, older_than_ms: int | None, limit: int, queue: str | None = None, per_queue: bool = True
    ) -> dict[str, int]:
        """Delete up to ``limit`` tasks past their queue's age (see the interface), in one
        transaction; return how many per queue."""
        args = {"older_than_ms": older_than_ms, "limit": limit, "queue": queue, "per_queue": per_queue}
        with self._transaction() as conn:
            return self._delete_picked(conn, self._on(conn, "tasks_prune_pick", args).fetchall())

    def tasks_prunable(
        self, older_than_ms: int | None, queue: str | None = None, per_queue: bool = True
    ) -> dict[str, int]:
        """How many tasks pruning would delete now, per queue (nothing is deleted)."""
        args = {"older_than_ms": older_than_ms, "queue": queue, "per_queue": per_queue}
        rows = self._read("tasks_prunable", args)
        return {str(r["queue_name"]): int(r["n"]) for r in rows}

    def task_forget(self, task_id: str) -> bool:
        """Delete one finished task now; False when it is unfinished, needed by a canvas
        child that has not finished, or unknown."""
        with self._transaction() as conn:
            picked = self._on(conn, "task_forget_pick", {"id": task_id}).fetchall()
            return bool(self._delete_picked(conn, picked))

    def _delete_picked(self, conn: Any, picked: list[Any]) -> dict[str, int]:
        if not picked:
            return {}
        ids = self._list([str(r["workflow_uuid"]) for r in picked])
        self._on(conn, "task_links_delete_for", {"ids": ids})
        self._on(conn, "tasks_delete_finished", {"ids": ids})
        return dict(Counter(str(r["queue_name"]) for r in picked))
