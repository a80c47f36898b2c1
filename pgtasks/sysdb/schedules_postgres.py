"""The schedule methods of the PostgreSQL dialect (mixed into PostgresSystemDatabase)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from pgtasks.sysdb.records import EnqueueResult, NewTask
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


class PostgresSchedules:
    """Schedules in PostgreSQL. Uses the dialect's statements, transactions and enqueue."""

    sql: dict[str, str]
    _tx: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]
    _all: Callable[..., list[dict[str, Any]]]
    _count: Callable[..., int]
    _enqueue_on: Callable[[psycopg.Connection[Any], list[NewTask]], list[EnqueueResult]]

    def schedules_upsert(self, params: SchedulesUpsert) -> list[ScheduleRecord]:
        stored = []
        with self._tx() as conn:
            for write in params.schedules:
                args = upsert_params(write, str(uuid.uuid4()), params.active_since)
                row = conn.execute(self.sql["schedule_upsert"], args).fetchone()
                stored.append(schedule_from_row(row))
            if params.deactivate_missing_from is not None:
                conn.execute(
                    self.sql["schedules_deactivate_missing"],
                    {"source": params.deactivate_missing_from, "names": [w.name for w in params.schedules]},
                )
        return stored

    def schedules_list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        args = {"name": params.name, "statuses": [str(s) for s in params.statuses]}
        return [schedule_from_row(r) for r in self._all("schedules_list", args)]

    def schedule_set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        args = {"name": params.name, "status": str(params.status), "active_since": params.active_since}
        rows = self._all("schedule_set_status", args)
        return schedule_from_row(rows[0]) if rows else None

    def schedule_delete(self, name: str) -> bool:
        return self._count("schedule_delete", {"name": name}) == 1

    def schedule_fire(self, params: ScheduleFire) -> FireResult:
        with self._tx() as conn:
            version = None
            if params.pin_latest_version:
                row = conn.execute(self.sql["schedule_latest_version"]).fetchone()
                version = row["version_name"] if row else None
            if params.cursor is not None:
                cursor = dataclasses.asdict(params.cursor)
                if (
                    conn.execute(self.sql["schedule_advance"], {"name": params.name, **cursor}).fetchone()
                    is None
                ):
                    return FireResult(fired=False, application_version=version)
            tasks = list(_pinned(params.tasks, version))
            results = self._enqueue_on(conn, tasks) if tasks else []
            if params.before_commit is not None:
                params.before_commit()
        return FireResult(fired=True, results=tuple(results), application_version=version)


def _pinned(tasks: tuple[NewTask, ...], version: str | None) -> Iterator[NewTask]:
    for task in tasks:
        yield task if version is None else dataclasses.replace(task, application_version=version)
