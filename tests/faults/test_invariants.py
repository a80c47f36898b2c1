"""The invariant checker itself: it passes a clean history and catches each violation it
claims to (rows and ledger lines written by hand, no worker)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks import Client
from tests.faults.invariants import (
    Execution,
    Ledger,
    Transition,
    check,
    forgotten_claims,
    given_back,
    install_history,
    query,
    touched_by,
    unfinished,
)


class Scene:
    """One SUCCESS task with two checkpoints and their effects, in a fresh database."""

    def __init__(self, url: str, ledger: Path) -> None:
        self.url, self.ledger = url, ledger
        install_history(url)
        self.client = Client(url)
        self.task = self.client.enqueue("faults.steps", [2]).id
        self.set_status(self.task, "PENDING", executor="w1", attempts=1)
        for function_id in (1, 2):
            self.checkpoint(self.task, function_id)
            self.effect(self.task, function_id)
        self.set_status(self.task, "SUCCESS")

    def set_status(self, task_id: str, status: str, executor: str | None = None, attempts: int = 1) -> None:
        query(
            self.url,
            "UPDATE {t} SET status = ?, executor_id = ?, recovery_attempts = ? WHERE workflow_uuid = ?",
            (status, executor, attempts, task_id),
        )

    def checkpoint(self, task_id: str, function_id: int) -> None:
        query(
            self.url,
            "INSERT INTO {o} (workflow_uuid, function_id, function_name, output) VALUES (?, ?, 'work', '1')",
            (task_id, function_id),
        )

    def effect(self, task_id: str, function_id: int) -> None:
        with self.ledger.open("a") as ledger:
            ledger.write(f"{task_id} effect {function_id} work\n")

    def span(self, task_id: str, start: float, end: float, queue: str = "limited") -> None:
        with self.ledger.open("a") as ledger:
            ledger.write(f"{task_id} start {start} {queue} tok-{task_id}-{start}\n")
            ledger.write(f"{task_id} end {end} {queue} tok-{task_id}-{start}\n")

    def problems(
        self,
        acknowledged: list[str] | None = None,
        faulted_ids: list[str] | None = None,
        limits: dict[str, int] | None = None,
    ) -> list[str]:
        acked = acknowledged or [self.task]
        return check(self.url, acked, faulted_ids or [], limits, ledger=self.ledger, strict=False).problems


@pytest.fixture
def scene(database_url: str, tmp_path: Path) -> Iterator[Scene]:
    made = Scene(database_url, tmp_path / "effects.log")
    yield made
    made.client.close()


def test_a_clean_history_passes(scene: Scene) -> None:
    report = check(scene.url, [scene.task], ledger=scene.ledger)
    assert report.ok and report.statuses == {"SUCCESS": 1}
    assert (report.checkpoints, report.effects, report.repeated, report.transitions) == (2, 2, 0, 3)
    assert "invariants: PASSED" in report.summary()
    assert unfinished(scene.url, [scene.task, "nope"]) == ["nope"]


def test_lost_unfinished_and_unexpected_tasks_are_caught(scene: Scene) -> None:
    other = scene.client.enqueue("faults.steps").id
    assert any("not reach a terminal state" in p for p in scene.problems([scene.task, other]))
    assert any("nobody acknowledged" in p for p in scene.problems([scene.task]))
    assert any("not in the database" in p for p in scene.problems([scene.task, other, "ghost"]))
    with pytest.raises(AssertionError, match="invariants: FAILED"):
        check(scene.url, [scene.task], ledger=scene.ledger)


def test_a_second_outcome_is_caught(scene: Scene) -> None:
    scene.set_status(scene.task, "ENQUEUED")
    scene.set_status(scene.task, "ERROR")
    problems = scene.problems()
    assert any("left a terminal state" in p for p in problems)
    assert any("terminal state more than once" in p for p in problems)


def test_step_executions_are_counted_against_the_fault_log(scene: Scene) -> None:
    scene.effect(scene.task, 2)
    assert any("step 2 of" in p and "ran 2 times (allowed 1)" in p for p in scene.problems())
    scene.set_status(scene.task, "SUCCESS", attempts=2)  # two starts: a body may run twice
    assert scene.problems(faulted_ids=[scene.task]) == []
    scene.effect(scene.task, 2)
    assert any("ran 3 times (allowed 2)" in p for p in scene.problems(faulted_ids=[scene.task]))
    scene.effect(scene.task, 7)
    assert any("step 7" in p and "no checkpoint" in p for p in scene.problems(faulted_ids=[scene.task] * 3))


def test_checkpoint_gaps_and_bodies_that_never_ran_are_caught(scene: Scene) -> None:
    scene.checkpoint(scene.task, 4)
    problems = scene.problems()
    assert any("checkpoints [1, 2, 4], not 1..3" in p for p in problems)
    assert any("step 4" in p and "never ran" in p for p in problems)


def test_attempts_over_the_limit_and_early_dead_letters_are_caught(scene: Scene) -> None:
    scene.set_status(scene.task, "SUCCESS", attempts=102)
    assert any("started 102 times" in p for p in scene.problems())
    scene.set_status(scene.task, "MAX_RECOVERY_ATTEMPTS_EXCEEDED", attempts=3)
    assert any("dead-lettered after 3 of 1 + 100" in p for p in scene.problems())


def test_concurrency_over_a_queue_limit_is_caught(scene: Scene) -> None:
    ids = [scene.task, *(scene.client.enqueue("faults.steps").id for _ in range(2))]
    for task_id in ids[1:]:
        scene.set_status(task_id, "SUCCESS")
    for i, task_id in enumerate(ids):
        scene.span(task_id, 100.0 + i, 110.0)
    assert scene.problems(ids, limits={"limited": 3}) == []
    assert any(
        "ran 3 tasks at once, over its limit of 2" in p for p in scene.problems(ids, limits={"limited": 2})
    )


def test_starts_over_a_queue_rate_limit_are_caught(scene: Scene) -> None:
    """Three claims within a second on the queue "default": over a limit of 2 per minute, not
    over 3 per minute, nor over 2 per minute once one task is in the fault log."""
    ids = [scene.task, *(scene.client.enqueue("faults.steps").id for _ in range(2))]
    for task_id in ids[1:]:
        scene.set_status(task_id, "PENDING", executor="w1")
        scene.set_status(task_id, "SUCCESS")

    def check_rate(most: int, faulted: tuple[str, ...] = ()) -> list[str]:
        limits = {"default": (most, 60.0)}
        return check(scene.url, ids, list(faulted), ledger=None, rate_limits=limits, strict=False).problems

    assert check_rate(3) == []
    assert check_rate(2) == ["queue 'default' started 3 tasks within 60s, over its limit of 2"]
    assert check_rate(2, faulted=[ids[1]]) == []


def test_the_history_tells_which_tasks_a_fault_touched(scene: Scene) -> None:
    before = time.time()
    other = scene.client.enqueue("faults.steps").id
    scene.set_status(other, "PENDING", executor="w2")
    scene.set_status(other, "ENQUEUED")
    scene.set_status(other, "PENDING", executor="w3")
    now = time.time()
    assert touched_by(scene.url, now, now) == {other}
    assert touched_by(scene.url, before, now, "w2") == {other}
    assert touched_by(scene.url, before, now, "w9") == set()
    assert touched_by(scene.url, before - 60, before - 30) == set()
    assert given_back(scene.url) == [other]


def test_a_run_under_an_undone_claim_counts_as_forgotten_within_the_windows_it_can_fall_in() -> None:
    """An unrecorded claim's step may have begun up to a second before an immediate restart
    (the claim's WAL unflushed), during it, or just after a quick one: a first step trusts a
    claim younger than OWNERSHIP_FRESH_SECONDS without reading the task. Later, it is a
    problem."""
    crash = (1000.0, 1000.03)  # a restart of 30 ms

    def forgotten_at(at: float) -> list[str]:
        history = [Transition("t1", "ENQUEUED", "PENDING", "w1", at + 0.5, "recorded")]
        seen = Ledger(Counter({("t1", 1): 2}), [], {("t1", 1): [Execution("1", "undone", at)]})
        return forgotten_claims(history, seen, [crash])

    assert forgotten_at(999.2) == ["t1"]  # its claim's WAL was not flushed yet
    assert forgotten_at(1000.01) == ["t1"]  # during the restart
    assert forgotten_at(1000.09) == ["t1"]  # after it, on the claim's word
    assert forgotten_at(1000.5) == []  # no claim that young was made before the crash
    assert forgotten_at(998.5) == []
