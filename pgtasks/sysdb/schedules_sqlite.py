"""The schedule methods of the SQLite dialect (mixed into SqliteSystemDatabase).

Every write runs inside BEGIN IMMEDIATE: one writer at a time, so the compare-and-set of a
fire and the insert of its tasks cannot interleave with another scheduler's.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from pgtasks.sysdb.dedup import enqueue_results, single_task_params
from pgtasks.sysdb.schedule_records import (
    FireResult,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleRecord,
    ScheduleStatusChange,
    SchedulesUpsert,
    schedule_from_row,
    upsert_params,
)


class SqliteSchedules:
    """Schedules in SQLite. Uses the dialect's statements and write transactions."""

    sql: dict[str, str]
    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[dict[str, Any]]]
    _write_all: Callable[..., list[dict[str, Any]]]
    _write_count: Callable[..., int]

    def schedules_upsert(self, params: SchedulesUpsert) -> list[ScheduleRecord]:
        stored = []
        with self._write() as db:
            for write in params.schedules:
                args = upsert_params(write, str(uuid.uuid4()), params.active_since)
                stored.append(schedule_from_row(db.execute(self.sql["schedule_upsert"], args).fetchone()))
            if params.deactivate_missing_from is not None:
                db.execute(
                    self.sql["schedules_deactivate_missing"],
                    {
                        "source": params.deactivate_missing_from,
                        "names": json.dumps([w.name for w in params.schedules]),
                    },
                )
        return stored

    def schedules_list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        args = {"name": params.name, "statuses": json.dumps([str(s) for s in params.statuses])}
        return [schedule_from_row(r) for r in self._read("schedules_list", args)]

    def schedule_set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        args = {"name": params.name, "status": str(params.status), "active_since": params.active_since}
        rows = self._write_all("schedule_set_status", args)
        return schedule_from_row(rows[0]) if rows else None

    def schedule_delete(self, name: str) -> bool:
        return self._write_count("schedule_delete", {"name": name}) == 1

    def schedule_fire(self, params: ScheduleFire) -> FireResult:
        with self._write() as db:
            version = None
            if params.pin_latest_version:
                row = db.execute(self.sql["schedule_latest_version"]).fetchone()
                version = row["version_name"] if row else None
            if params.cursor is not None:
                cursor = dataclasses.asdict(params.cursor)
                if (
                    db.execute(self.sql["schedule_advance"], {"name": params.name, **cursor}).fetchone()
                    is None
                ):
                    return FireResult(fired=False, application_version=version)
            tasks = [
                t if version is None else dataclasses.replace(t, application_version=version)
                for t in params.tasks
            ]
            inserted: set[str] = set()
            existing: list[dict[str, Any]] = []
            for task in tasks:
                task_params = single_task_params(task)
                if db.execute(self.sql["task_insert"], task_params).fetchone():
                    inserted.add(task.task_id)
                    continue
                existing += db.execute(self.sql["task_find_by_id"], task_params).fetchall()
                if task.deduplication_id is not None:
                    existing += db.execute(self.sql["task_find_by_dedup"], task_params).fetchall()
            if params.before_commit is not None:
                params.before_commit()
        return FireResult(
            fired=True, results=tuple(enqueue_results(tasks, inserted, existing)), application_version=version
        )
