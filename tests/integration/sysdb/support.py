"""Helpers of the system database conformance suite (tests/integration/sysdb)."""

from __future__ import annotations

import json

from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import ClaimParams, LinkKind, NewTask, StepRecord


def new(task_id: str, queue: str = "default", **kw: object) -> NewTask:
    return NewTask(
        task_id=task_id, name="proj.add", inputs='{"args":[1,2],"kwargs":{}}', queue_name=queue, **kw
    )  # type: ignore[arg-type]


def claim(
    db: SystemDatabase,
    executor: str = "w1",
    limit: int = 10,
    version: str = "v1",
    queues: tuple[str, ...] = ("default",),
) -> list[str]:
    return [t.task_id for t in db.tasks_claim(ClaimParams(executor, version, queues, limit))]


def step(task_id: str, fid: int, executor: str = "w1", output: str = "1") -> StepRecord:
    return StepRecord(task_id, fid, f"step{fid}", output, None, executor_id=executor)


def task(task_id: str, *args: object) -> NewTask:
    """A task whose JSON inputs carry ``args``."""
    return NewTask(task_id, "proj.t", json.dumps({"args": list(args), "kwargs": {}}), "default")


def args_of(db: SystemDatabase, task_id: str) -> list[object]:
    record = db.task_get(task_id)
    assert record is not None
    return list(json.loads(record.inputs)["args"])


class JsonLinks:
    """A :class:`~pgtasks.sysdb.records.LinkResolver` over JSON inputs: the storage suite
    resolves links without the engine (whose resolver is ``engine.canvas.CanvasLinks``)."""

    def with_result(self, child: tuple[str, str], result: tuple[str, str | None]) -> tuple[str, str]:
        return self._prepend(child, json.loads(result[1] or "null"))

    def with_results(self, child: tuple[str, str], results: list[tuple[str, str | None]]) -> tuple[str, str]:
        return self._prepend(child, [json.loads(text or "null") for _, text in results])

    def with_task_id(self, child: tuple[str, str], task_id: str) -> tuple[str, str]:
        return self._prepend(child, task_id)

    def dependency_error(self, parent_id: str, parent_error: str | None, kind: LinkKind) -> str:
        return json.dumps({"type": "DependencyFailed", "parent": parent_id, "kind": str(kind)})

    def failure(self, exc: BaseException) -> str:
        return json.dumps({"type": type(exc).__name__, "message": str(exc)})

    def revoked_error(self, expired: bool) -> str:
        return json.dumps({"type": "Revoked", "message": "expired" if expired else "revoked"})

    def as_output(self, result: tuple[str, str | None], tag: str) -> str | None:
        return result[1]

    @staticmethod
    def _prepend(child: tuple[str, str], value: object) -> tuple[str, str]:
        inputs = json.loads(child[1])
        inputs["args"] = [value, *inputs["args"]]
        return child[0], json.dumps(inputs)
