"""The prefork pool's micro-batches, with real child processes: a child that takes several
held tasks at once and then dies, passes a hard time limit, or has a task terminated, gives
the rest of its batch back unstarted exactly once, and each task gets the outcome it would
get alone. One pool of one child serves the module; its tasks need no database (no steps)."""

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
from pgtasks.sysdb.records import Outcome, Status, TaskRecord
from pgtasks.worker import prefork, prefork_child
from pgtasks.worker.pools import PoolOptions
from pgtasks.worker.prefork import PreforkPool
from tests.support.inprocess import wait_for


def _gate(path: str) -> str:
    """Runs until ``path`` exists (``path``.started marks its start)."""
    Path(f"{path}.started").touch()
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.005)
    return "open"


def _noop() -> None:
    return None


def _exit(code: int) -> None:
    if code:
        os._exit(code)


class _Pool:
    """The module's pool, and every outcome it reported, by task id."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.engine = Engine(Settings(database_url=f"sqlite:///{tmp / 'db.sqlite3'}"))
        for name, fn in (("gate", _gate), ("latch", _gate), ("noop", _noop), ("exit", _exit)):
            self.engine.registry.add(TaskDefinition(name, fn))
        self.outcomes: dict[str, list[Outcome | None]] = {}
        self._lock = threading.Lock()
        self.pool = PreforkPool(self.engine, "w", PoolOptions("prefork", 1), self._finish)

    def _finish(self, record: TaskRecord, outcome: Outcome | None) -> None:
        with self._lock:
            self.outcomes.setdefault(record.task_id, []).append(outcome)

    def submit(self, name: str, *args: object, meta: dict[str, object] | None = None) -> str:
        task_id = str(uuid.uuid4())
        inputs = json.dumps({"args": list(args), "kwargs": {}})
        meta_text = json.dumps(meta) if meta else None
        self.pool.submit(
            TaskRecord(task_id, Status.PENDING, name, inputs, "json", "q", claim_token="t", meta=meta_text),
            [],
        )
        return task_id

    def outcome(self, task_id: str) -> Outcome | None:
        wait_for(lambda: task_id in self.outcomes, what=f"the outcome of {task_id}")
        [outcome] = self.outcomes[task_id]
        return outcome

    def running(self, task_id: str) -> None:
        wait_for(lambda: task_id in self.pool.snapshot()[0], what=f"{task_id} to run")

    def started(self, gate: Path) -> None:
        wait_for(Path(f"{gate}.started").exists, what=f"the task waiting for {gate} to start")

    def blocked(self) -> Path:
        """Start a task that runs until the returned path is created: what is submitted
        next is held, then taken by the child in one batch."""
        path = self.tmp / str(uuid.uuid4())
        self.running(self.submit("gate", str(path)))
        return path

    def gate(self) -> Path:
        return self.tmp / str(uuid.uuid4())


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Pool]:
    with pytest.MonkeyPatch.context() as patch:
        # Every task here waits longer than the check threshold, and none has a row to check
        # against; and a loaded machine must not make these no-op tasks look too slow to batch.
        patch.setattr(prefork_child, "HELD_CHECK_SECONDS", 3600.0)
        patch.setattr(prefork, "MICRO_BATCH_SECONDS", 10.0)
        served = _Pool(tmp_path_factory.mktemp("prefork"))
        served.pool.start()
        try:
            opened = served.tmp / "open"
            opened.touch()
            # Run times learned: each name is known to be short from now on.
            for name, args in (
                ("gate", (str(opened),)),
                ("latch", (str(opened),)),
                ("noop", ()),
                ("exit", (0,)),
            ):
                assert served.outcome(served.submit(name, *args)) is not None
            yield served
        finally:
            served.pool.shutdown(wait=False)
            served.engine.close()


def _unstarted(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.status is Status.ENQUEUED and outcome.unstarted


def test_a_child_that_dies_mid_batch_gives_back_the_rest_unstarted(pool: _Pool) -> None:
    gate = pool.blocked()
    first, dying, third, fourth = (
        pool.submit(*task) for task in (("noop",), ("exit", 3), ("noop",), ("noop",))
    )
    assert pool.pool.waiting() == 4
    gate.touch()
    assert pool.outcome(first).status is Status.SUCCESS  # type: ignore[union-attr]
    lost = pool.outcome(dying)
    assert lost is not None and lost.status is Status.ENQUEUED and not lost.unstarted
    assert "WorkerLostError" in (lost.error or "") and "code 3" in (lost.error or "")
    assert _unstarted(pool.outcome(third)) and _unstarted(pool.outcome(fourth))
    assert pool.outcome(pool.submit("noop")).status is Status.SUCCESS  # type: ignore[union-attr]


def test_a_batch_mate_past_its_hard_limit_is_killed_and_the_rest_given_back(pool: _Pool) -> None:
    gate = pool.blocked()
    first = pool.submit("noop")
    stuck = pool.submit("latch", str(pool.gate()), meta={"time_limit": 0.5})
    last = pool.submit("noop")
    gate.touch()
    assert pool.outcome(first).status is Status.SUCCESS  # type: ignore[union-attr]
    killed = pool.outcome(stuck)
    assert killed is not None and killed.status is Status.ERROR
    assert "TimeLimitExceeded" in (killed.error or "") and "time limit of 0.5s" in (killed.error or "")
    assert _unstarted(pool.outcome(last))


def test_terminate_skips_an_unstarted_batch_mate_and_kills_a_running_one(pool: _Pool) -> None:
    gate = pool.blocked()
    held = pool.gate()
    running = pool.submit("latch", str(held))
    after = pool.submit("noop")
    revoked = pool.submit("noop")
    gate.touch()
    pool.started(held)
    assert pool.pool.terminate(revoked)  # in the child's batch, not started: never starts
    assert pool.pool.terminate(running)  # running: its child is killed
    assert pool.outcome(running) is None
    assert pool.outcome(revoked) is None
    assert _unstarted(pool.outcome(after))
    # The same, the revoked task reached: the child reports it not run.
    gate = pool.blocked()
    held = pool.gate()
    running = pool.submit("latch", str(held))
    revoked = pool.submit("noop")
    last = pool.submit("noop")
    gate.touch()
    pool.started(held)
    assert pool.pool.terminate(revoked)
    held.touch()
    assert pool.outcome(running).status is Status.SUCCESS  # type: ignore[union-attr]
    assert pool.outcome(revoked) is None
    assert pool.outcome(last).status is Status.SUCCESS  # type: ignore[union-attr]
    assert not pool.pool.terminate(revoked)  # finished: nothing to stop


def test_a_child_asked_to_exit_by_a_shrink_is_removed_and_the_pool_serves_on(pool: _Pool) -> None:
    pool.pool.resize(1)
    wait_for(lambda: len(pool.pool.snapshot()[2]) == 2, what="the pool to grow")
    pool.pool.resize(-1)
    wait_for(lambda: len(pool.pool.snapshot()[2]) == 1, what="the shrunk child to be removed")
    assert pool.outcome(pool.submit("noop")).status is Status.SUCCESS  # type: ignore[union-attr]


def test_a_claimed_batch_reaches_an_idle_child_in_one_message(pool: _Pool) -> None:
    gate = pool.gate()
    calls: tuple[tuple[str, list[str]], ...] = (("gate", [str(gate)]), ("noop", []), ("noop", []))
    ids = [str(uuid.uuid4()) for _ in calls]
    records = [
        TaskRecord(task_id, Status.PENDING, name, json.dumps({"args": args, "kwargs": {}}), "json", "q")
        for task_id, (name, args) in zip(ids, calls, strict=True)
    ]
    pool.pool.submit_many([(record, []) for record in records])
    pool.started(gate)
    running, held, _ = pool.pool.snapshot()
    assert list(running) == ids[:1] and held == ids[1:]
    assert [s.record.task_id for s in pool.pool._children[0].batch] == ids  # none left in the parent
    gate.touch()
    assert [pool.outcome(task_id).status for task_id in ids] == [Status.SUCCESS] * 3  # type: ignore[union-attr]
