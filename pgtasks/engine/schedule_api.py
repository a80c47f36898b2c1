"""The engine's store of schedules: what the scheduler (the beat loop, runtime management)
reads and writes. Firing inserts the fired tasks in the transaction that moves the
schedule's cursor; the tasks are built by the scheduler with the engine's enqueue path."""

from __future__ import annotations

from pgtasks.engine.connection import DatabaseHandle
from pgtasks.sysdb.schedule_records import (
    FireResult,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleRecord,
    SchedulesStored,
    ScheduleStatusChange,
    SchedulesUpsert,
)


class ScheduleStore:
    """The engine's schedule operations (``engine.schedules``), over its ``database`` handle."""

    def __init__(self, database: DatabaseHandle) -> None:
        self._database = database

    def now_ms(self) -> int:
        """The database server's clock, in epoch milliseconds (the scheduler's default clock)."""
        return self._database.sysdb.now_ms()

    def upsert(self, params: SchedulesUpsert) -> SchedulesStored:
        """Create or update schedules (see ``SchedulesUpsert``)."""
        return self._database.sysdb.schedules_upsert(params)

    def list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        """Stored schedules by name, filtered as ``params`` says."""
        return self._database.sysdb.schedules_list(params)

    def set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        """Pause or resume one schedule; None if there is none by that name."""
        return self._database.sysdb.schedule_set_status(params)

    def delete(self, name: str) -> bool:
        """Delete one schedule (its fired tasks stay); False if there was none."""
        return self._database.sysdb.schedule_delete(name)

    def fire(self, params: ScheduleFire) -> FireResult:
        """Insert fired tasks, moving the cursor when ``params`` carries one."""
        return self._database.sysdb.schedule_fire(params)
