"""Pool.give_back with real pools (threads, asyncio; prefork with a child process): the tasks held
last that waited long enough go back unstarted, once each, never one that started; the rest
keep their order and run once, also while give-backs race the starts. One pool of one
thread or child per kind serves the module; its tasks need no database (no steps)."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks.engine.core import Engine
from pgtasks.engine.registry import TaskDefinition
from pgtasks.engine.settings import Settings
from pgtasks.sysdb.records import Outcome, Status, StepRecord, TaskRecord
from pgtasks.worker import held, prefork_child
from pgtasks.worker.pools import Pool, PoolOptions, make_pool
from tests.support.inprocess import wait_for


def _gate(path: str) -> None:
    """Runs until ``path`` exists (``path``.started marks its start)."""
    Path(f"{path}.started").touch()
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.005)


def _mark(path: str, i: int) -> None:
    """Appends ``i`` to the file ``path``: which tasks ran, in which order."""
    with open(path, "a") as marks:
        marks.write(f"{i}\n")


class _Pool:
    """A pool of one thread or child, and every outcome it reported, by task id."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.tmp = tmp
        self.engine = Engine(Settings(database_url=f"sqlite:///{tmp / 'db.sqlite3'}"))
        self.engine.registry.add(TaskDefinition("gate", _gate))
        self.engine.registry.add(TaskDefinition("mark", _mark))
        self.outcomes: dict[str, list[Outcome | None]] = {}
        self._lock = threading.Lock()
        self.pool: Pool = make_pool(self.engine, "w", PoolOptions(kind, 1), self._finish)

    def _finish(self, record: TaskRecord, outcome: Outcome | None) -> None:
        with self._lock:
            self.outcomes.setdefault(record.task_id, []).append(outcome)

    def submit_marks(self, path: Path, count: int) -> list[str]:
        """``count`` tasks marking 0, 1, ... in ``path``, submitted in one batch (one claim)."""
        batch: list[tuple[TaskRecord, list[StepRecord] | None]] = [
            (self._record("mark", str(path), i), []) for i in range(count)
        ]
        self.pool.submit_many(batch)  # type: ignore[attr-defined]
        return [record.task_id for record, _ in batch]

    def _record(self, name: str, *args: object) -> TaskRecord:
        inputs = json.dumps({"args": list(args), "kwargs": {}})
        return TaskRecord(str(uuid.uuid4()), Status.PENDING, name, inputs, "json", "q", claim_token="t")

    def blocked(self) -> Path:
        """Start a task that runs until the returned path is created: what comes next is held."""
        path = self.tmp / str(uuid.uuid4())
        self.pool.submit(self._record("gate", str(path)), [])
        wait_for(Path(f"{path}.started").exists, what="the gate task to start")
        return path

    def each_finished(self, task_ids: list[str]) -> None:
        wait_for(lambda: all(t in self.outcomes for t in task_ids), what="every outcome")


@pytest.fixture(scope="module", params=["threads", "prefork", "asyncio"])
def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Pool]:
    with pytest.MonkeyPatch.context() as patch:
        # The tasks here have no row to check against before a late start.
        patch.setattr(held, "HELD_CHECK_SECONDS", 3600.0)
        patch.setattr(prefork_child, "HELD_CHECK_SECONDS", 3600.0)
        served = _Pool(request.param, tmp_path_factory.mktemp(request.param))
        served.pool.start()
        try:
            yield served
        finally:
            served.pool.shutdown(wait=False)
            served.engine.close()


def _unstarted(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.status is Status.ENQUEUED and outcome.unstarted


def _marked(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_the_last_held_tasks_that_waited_go_back_and_the_rest_run_in_order(pool: _Pool) -> None:
    gate = pool.blocked()
    marks = pool.tmp / str(uuid.uuid4())
    ids = pool.submit_marks(marks, 6)
    assert pool.pool.waiting() == 6
    assert pool.pool.give_back(2, 3600.0) == 0  # none has waited an hour
    assert pool.pool.give_back(2, 0.0) == 2
    assert pool.pool.waiting() == 4
    back = ids[4:]
    pool.each_finished(back)
    assert all(len(pool.outcomes[t]) == 1 and _unstarted(pool.outcomes[t][0]) for t in back)
    gate.touch()
    pool.each_finished(ids[:4])
    assert _marked(marks) == [0, 1, 2, 3]  # the rest in claim order; the given-back ones never ran
    for task_id in ids[:4]:
        [outcome] = pool.outcomes[task_id]
        assert outcome is not None and outcome.status is Status.SUCCESS
    assert pool.pool.give_back(10, 0.0) == 0  # nothing held: nothing given back, twice or late
    assert all(len(pool.outcomes[t]) == 1 for t in ids)


def test_give_backs_racing_the_starts_leave_each_task_one_outcome(pool: _Pool) -> None:
    marks = pool.tmp / str(uuid.uuid4())
    ids = pool.submit_marks(marks, 400)
    given = 0
    while not all(t in pool.outcomes for t in ids):
        given += pool.pool.give_back(3, 0.0)
    ran = _marked(marks)
    back = [i for i, t in enumerate(ids) if _unstarted(pool.outcomes[t][0])]
    assert all(len(pool.outcomes[t]) == 1 for t in ids)  # one outcome each: given back or run
    assert given == len(back) > 0
    assert ran == sorted(set(range(400)) - set(back))  # the others ran once each, in order
    for i in ran:
        outcome = pool.outcomes[ids[i]][0]
        assert outcome is not None and outcome.status is Status.SUCCESS
