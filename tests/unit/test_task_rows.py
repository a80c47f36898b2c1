"""A claimed row becomes the TaskRecord its columns say, field by field: task_from_row fills
the record's slots in field order (faster than the dataclass's __init__), so a field added,
removed or moved in TaskRecord without the row code following shows here. A claim returns
fewer columns (CLAIMED_COLUMNS, as tuples): claimed_record fills the rest from the claim."""

from __future__ import annotations

from dataclasses import fields

import pytest

from pgtasks.sysdb.records import ClaimParams, EndReason, Status, TaskRecord
from pgtasks.sysdb.rows import CLAIMED_COLUMNS, claimed_record, task_from_row

# Every field a distinct value, by the record's field names.
EXPECTED = {f.name: f"value-{f.name}" for f in fields(TaskRecord)}
EXPECTED.update(
    status=Status.PENDING,
    priority=7,
    delay_until_epoch_ms=11,
    recovery_attempts=2,
    max_recovery_attempts=9,
    created_at=13,
    updated_at=17,
    started_at_epoch_ms=19,
    enqueue_seq=23,
    expires_at_epoch_ms=29,
    has_steps=True,
    retries=3,
    has_links=True,
    end_reason=EndReason.EXPIRED,
    claimed_at=31.5,
)
# The columns of the row, where their names differ from the fields'.
COLUMNS = {
    "task_id": "workflow_uuid",
    "partition_key": "queue_partition_key",
    "parent_task_id": "parent_workflow_id",
}


def row_of(expected: dict[str, object]) -> dict[str, object]:
    row = {COLUMNS.get(name, name): value for name, value in expected.items() if name != "claimed_at"}
    row["status"] = Status.PENDING.value
    row["end_reason"] = EndReason.EXPIRED.value
    return row


def test_every_column_lands_in_its_field() -> None:
    record = task_from_row(row_of(EXPECTED), claimed_at=31.5)
    assert {f.name: getattr(record, f.name) for f in fields(TaskRecord)} == EXPECTED
    assert record == TaskRecord(**EXPECTED)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        record.status = Status.SUCCESS  # type: ignore[misc]  # still frozen


def test_an_unknown_status_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'LOST'"):
        task_from_row({**row_of(EXPECTED), "status": "LOST"})


# A claimed row: the columns a claim returns (CLAIMED_COLUMNS), read by position.
CLAIM = ClaimParams("worker-1", "v7", ("default",), 5, claim_token="token-1")
FROM_CLAIM = {
    "status": Status.PENDING,
    "executor_id": "worker-1",
    "application_version": "v7",
    "claim_token": "token-1",
    "updated_at": EXPECTED["started_at_epoch_ms"],  # the claim's one timestamp
}
NOT_RETURNED = ("output", "deduplication_id", "partition_key", "forked_from", "end_reason", "wait_for")


def test_a_claimed_row_lands_in_the_fields_its_columns_name() -> None:
    by_column = {COLUMNS.get(name, name): value for name, value in EXPECTED.items()}
    row = tuple(by_column[column] for column in CLAIMED_COLUMNS)
    record = claimed_record(row, CLAIM, claimed_at=31.5)
    expected = {**EXPECTED, **FROM_CLAIM, **dict.fromkeys(NOT_RETURNED)}
    assert {f.name: getattr(record, f.name) for f in fields(TaskRecord)} == expected
    assert record == TaskRecord(**expected)  # type: ignore[arg-type]


def test_every_field_of_a_claimed_record_is_returned_or_known_or_said_unset() -> None:
    returned = {
        name
        for name, column in {f.name: COLUMNS.get(f.name, f.name) for f in fields(TaskRecord)}.items()
        if column in CLAIMED_COLUMNS
    }
    accounted = returned | set(FROM_CLAIM) | set(NOT_RETURNED) | {"claimed_at"}
    assert accounted == {f.name for f in fields(TaskRecord)}
    assert not returned & (set(FROM_CLAIM) | set(NOT_RETURNED))


@pytest.mark.parametrize(("has_steps", "has_links"), [(None, 0), (False, 1)])
def test_sqlite_values_of_a_claimed_row(has_steps: bool | None, has_links: int) -> None:
    row = tuple({"has_steps": has_steps, "has_links": has_links}.get(c, 0) for c in CLAIMED_COLUMNS)
    record = claimed_record(row, CLAIM, claimed_at=0.0)
    assert record.has_steps is has_steps
    assert record.has_links is bool(has_links)
