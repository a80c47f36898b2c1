"""What a chain's task stores of the steps after it (``self.request.chain``): the nearest
ones within a budget, none that JSON cannot carry."""

from __future__ import annotations

from pgtasks.compat.bridge.chain_requests import CHAIN_SHOWN_BUDGET, MAX_CHAIN_SHOWN, shown_steps


def step(number: int, argument: object = None) -> dict[str, object]:
    return {"task": f"t{number}", "args": [argument], "kwargs": {}, "options": {"task_id": f"id{number}"}}


def test_the_nearest_steps_are_kept_the_next_one_last() -> None:
    kept = shown_steps([step(n) for n in range(1, 40)])
    assert [s["task"] for s in kept] == [f"t{n}" for n in range(MAX_CHAIN_SHOWN, 0, -1)]


def test_steps_beyond_the_budget_are_left_out() -> None:
    big = "x" * (CHAIN_SHOWN_BUDGET // 3)
    kept = shown_steps([step(n, big) for n in range(1, 10)])
    assert [s["task"] for s in kept] == ["t2", "t1"]
    (alone,) = shown_steps([step(1, "x" * CHAIN_SHOWN_BUDGET)])  # the next one, always
    assert alone["task"] == "t1" and alone["args"] == [] and alone["options"] == {"task_id": "id1"}
    assert shown_steps([]) == []


def test_a_step_json_cannot_carry_ends_the_list() -> None:
    kept = shown_steps([step(1), step(2, {(1, 2): 3}), step(3)])  # a pickle app's argument
    assert [s["task"] for s in kept] == ["t1"]
    (alone,) = shown_steps([step(1, {(1, 2): 3})])
    assert alone["task"] == "t1" and alone["args"] == []
