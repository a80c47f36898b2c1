"""The schedule methods of the system database, written once for both dialects.

Written over the dialect primitives (``primitives.py``) and the insert of tasks on a
connection (the same one ``tasks_enqueue`` uses). On SQLite the write transaction is BEGIN IMMEDIATE, so
the compare-and-set of a fire and the insert of its tasks cannot interleave with another
scheduler's; on PostgreSQL the row lock taken by the compare-and-set serialises racing fires.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

from pgtasks.sysdb.primitives import Primitives
from pgtasks.sysdb.records import NewTask
from pgtasks.sysdb.schedule_records import (
    FireResult,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleRecord,
    SchedulesStored,
    ScheduleStatusChange,
    SchedulesUpsert,
    schedule_from_row,
    upsert_params,
)


class ScheduleStore(Primitives):
    """Schedules in ``workflow_schedules``; see :class:`pgtasks.sysdb.interface.SystemDatabase`."""

    # -- the methods --------------------------------------------------------------------
    def schedules_upsert(self, params: SchedulesUpsert) -> SchedulesStored:
        stored: list[ScheduleRecord] = []
        refused: list[str] = []
        deactivated: list[str] = []
        with self._transaction() as conn:
            for write in params.schedules:
                args = upsert_params(write, str(uuid.uuid4()), params.active_since)
                row = self._on(conn, "schedule_upsert", args).fetchone()
                if row is None:  # the name belongs to another source
                    refused.append(write.name)
                else:
                    stored.append(schedule_from_row(row))
            if params.deactivate_missing_from is not None:
                names = self._list([w.name for w in params.schedules])
                rows = self._on(
                    conn,
                    "schedules_deactivate_missing",
                    {"source": params.deactivate_missing_from, "names": names},
                ).fetchall()
                deactivated = sorted(r["schedule_name"] for r in rows)
        return SchedulesStored(stored, refused, deactivated)

    def schedules_list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        args = {"name": params.name, "statuses": self._list([str(s) for s in params.statuses])}
        return [schedule_from_row(r) for r in self._read("schedules_list", args)]

    def schedule_set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        args = {"name": params.name, "status": str(params.status), "active_since": params.active_since}
        with self._transaction() as conn:
            row = self._on(conn, "schedule_set_status", args).fetchone()
        return schedule_from_row(row) if row is not None else None

    def schedule_delete(self, name: str) -> bool:
        with self._transaction() as conn:
            return bool(self._on(conn, "schedule_delete", {"name": name}).rowcount == 1)

    def schedule_fire(self, params: ScheduleFire) -> FireResult:
        queue = params.tasks[0].queue_name if params.tasks else None
        with self._transaction() as conn:
            version = None
            if params.pin_latest_version:
                row = self._on(conn, "schedule_latest_version", {"queue": queue}).fetchone()
                version = row["version_name"] if row else None
            if params.cursor is not None:
                cursor = {"name": params.name, **dataclasses.asdict(params.cursor)}
                if self._on(conn, "schedule_advance", cursor).fetchone() is None:
                    return FireResult(fired=False, application_version=version)
            tasks = list(_pinned(params.tasks, version))
            results = self._enqueue_on(conn, tasks) if tasks else []
            if params.before_commit is not None:
                params.before_commit()
        return FireResult(fired=True, results=tuple(results), application_version=version)


def _pinned(tasks: tuple[NewTask, ...], version: str | None) -> Iterator[NewTask]:
    for task in tasks:
        yield task if version is None else task._replace(application_version=version)
