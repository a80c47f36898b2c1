"""The engine's store of schedules: what the scheduler (the beat loop, runtime management)
reads and writes. Firing inserts the fired tasks in the transaction that moves the
schedule's cursor; the tasks are built by the scheduler with the engine's enqueue path."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pgtasks.sysdb.schedule_records import (
    FireResult,
    ListSchedulesParams,
    ScheduleFire,
    ScheduleRecord,
    SchedulesStored,
    ScheduleStatusChange,
    SchedulesUpsert,
)

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


class ScheduleStore:
    """The engine's schedule operations (``engine.schedules``)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def now_ms(self) -> int:
        """The database server's clock, in epoch milliseconds (the scheduler's default clock)."""
        return self._engine._sysdb.now_ms()

    def upsert(self, params: SchedulesUpsert) -> SchedulesStored:
        """Create or update schedules (see ``SchedulesUpsert``)."""
        return self._engine._sysdb.schedules_upsert(params)

    def list(self, params: ListSchedulesParams) -> list[ScheduleRecord]:
        """Stored schedules by name, filtered as ``params`` says."""
        return self._engine._sysdb.schedules_list(params)

    def set_status(self, params: ScheduleStatusChange) -> ScheduleRecord | None:
        """Pause or resume one schedule; None if there is none by that name."""
        return self._engine._sysdb.schedule_set_status(params)

    def delete(self, name: str) -> bool:
        """Delete one schedule (its fired tasks stay); False if there was none."""
        return self._engine._sysdb.schedule_delete(name)

    def fire(self, params: ScheduleFire) -> FireResult:
        """Insert fired tasks, moving the cursor when ``params`` carries one."""
        return self._engine._sysdb.schedule_fire(params)
