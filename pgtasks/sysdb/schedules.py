"""The schedule methods of the system database, written once for both dialects.

A dialect mixes :class:`ScheduleStore` in and supplies four hooks: a write transaction, a
read, the encoding of a list of text parameters, and the insert of tasks on a connection
(the same one ``tasks_enqueue`` uses). On SQLite the write transaction is BEGIN IMMEDIATE, so
the compare-and-set of a fire and the insert of its tasks cannot interleave with another
scheduler's; on PostgreSQL the row lock taken by the compare-and-set serialises racing fires.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from pgtasks.sysdb.records import EnqueueResult, NewTask
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


class ScheduleStore:
    """Schedules in ``workflow_schedules``; see :class:`pgtasks.sysdb.interface.SystemDatabase`."""

    sql: dict[str, str]

    # -- the dialect's hooks ------------------------------------------------------------
    def _write_tx(self) -> AbstractContextManager[Any]:
        """A connection inside one write transaction (committed on success)."""
        raise NotImplementedError

    def _read_rows(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows of the named statement, outside any write transaction."""
        raise NotImplementedError

    def _text_list(self, values: list[str]) -> Any:
        """A list of text values as the dialect's statements take it."""
        raise NotImplementedError

    def _enqueue_on(self, conn: Any, tasks: list[NewTask]) -> list[EnqueueResult]:
        """Insert ``tasks`` on ``conn`` with the semantics of ``tasks_enqueue``."""
        raise NotImplementedError

    # -- the methods --------------------------------------------------------------------
    def schedules_upsert(self, params: SchedulesUpsert) -> SchedulesStored:
        stored: list[ScheduleRecord] = []
        refused: list[str] = []
        deactivated: list[str] = []
        with self._write_tx() as conn:
            for write in params.schedules:
                args = upsert_params(write, str(uuid.uuid4()), params.active_since)
                row = conn.execute(self.sql["schedule_upsert"], args).fetchone()
                if row is None:  # the name belongs to another source
                    refused.append(write.name)
                else:
                    stored.append(schedule_from_row(row))
            if params.deactivate_missing_from is not None:
                names = self._text_list([w.name for w in params.schedules])
                rows = conn.execute(
                    self.sql["schedules_deactivate_missing"],
                    {"source": params.deactivate_missing_from, "names": names},
                ).fetchall()
                deactivated = sorted(r["schedule_name"] for r in rows)
        return SchedulesStored(stored, refused, deactivated)

    def schedules_list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        args = {"name": params.name, "statuses": self._text_list([str(s) for s in params.statuses])}
        return [schedule_from_row(r) for r in self._read_rows("schedules_list", args)]

    def schedule_set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        args = {"name": params.name, "status": str(params.status), "active_since": params.active_since}
        with self._write_tx() as conn:
            row = conn.execute(self.sql["schedule_set_status"], args).fetchone()
        return schedule_from_row(row) if row is not None else None

    def schedule_delete(self, name: str) -> bool:
        with self._write_tx() as conn:
            return bool(conn.execute(self.sql["schedule_delete"], {"name": name}).rowcount == 1)

    def schedule_fire(self, params: ScheduleFire) -> FireResult:
        queue = params.tasks[0].queue_name if params.tasks else None
        with self._write_tx() as conn:
            version = None
            if params.pin_latest_version:
                row = conn.execute(self.sql["schedule_latest_version"], {"queue": queue}).fetchone()
                version = row["version_name"] if row else None
            if params.cursor is not None:
                cursor = {"name": params.name, **dataclasses.asdict(params.cursor)}
                if conn.execute(self.sql["schedule_advance"], cursor).fetchone() is None:
                    return FireResult(fired=False, application_version=version)
            tasks = list(_pinned(params.tasks, version))
            results = self._enqueue_on(conn, tasks) if tasks else []
            if params.before_commit is not None:
                params.before_commit()
        return FireResult(fired=True, results=tuple(results), application_version=version)


def _pinned(tasks: tuple[NewTask, ...], version: str | None) -> Iterator[NewTask]:
    for task in tasks:
        yield task if version is None else dataclasses.replace(task, application_version=version)
