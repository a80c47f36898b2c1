"""A claimed row becomes the TaskRecord its columns say, field by field: task_from_row fills
the record's slots in field order (faster than the dataclass's __init__), so a field added,
removed or moved in TaskRecord without the row code following shows here."""

from __future__ import annotations

from dataclasses import fields

import pytest

from pgtasks.sysdb.records import EndReason, Status, TaskRecord
from pgtasks.sysdb.rows import task_from_row

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
