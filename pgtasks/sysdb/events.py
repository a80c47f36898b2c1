"""Events: values a running task publishes under a key (``workflow_events``), written once
for both dialects, and the revocations that ask a worker to stop a task at once."""

from __future__ import annotations

from pgtasks.sysdb.primitives import Primitives


class EventStore(Primitives):
    """``task_event_set``, ``task_event_get`` and ``tasks_to_terminate``; see
    :class:`pgtasks.sysdb.interface.SystemDatabase`."""

    def task_event_set(self, task_id: str, key: str, value: str, serialization: str) -> bool:
        args = {"id": task_id, "key": key, "value": value, "tag": serialization}
        return bool(self._write("task_event_set", args).rows)

    def task_event_get(self, task_id: str, key: str) -> tuple[str, str] | None:
        rows = self._read("task_event_get", {"id": task_id, "key": key})
        return (rows[0]["serialization"], rows[0]["value"]) if rows else None

    def tasks_to_terminate(self, task_ids: list[str]) -> list[str]:
        if not task_ids:
            return []
        rows = self._read("tasks_to_terminate", {"ids": self._list(sorted(task_ids))})
        return [r["workflow_uuid"] for r in rows]
