"""Firing a schedule: the tasks of its due times, inserted in the transaction that moves its
cursor (``SystemDatabase.schedule_fire``)."""

from __future__ import annotations

import datetime as dt
import uuid

from pgtasks.engine.core import Engine
from pgtasks.engine.crashpoints import crashpoint
from pgtasks.engine.options import SendOptions, build_new_task
from pgtasks.scheduler.definitions import StoredSchedule, fire_task_id, format_due
from pgtasks.sysdb.records import NewTask
from pgtasks.sysdb.schedule_records import FireCursor, FireResult, ScheduleFire


def fire_tasks(engine: Engine, schedule: StoredSchedule, task_ids: list[str]) -> list[NewTask]:
    """The rows of the tasks to insert, built by the same path as ``Engine.enqueue``."""
    record = schedule.record
    queue = record.queue_name
    max_attempts = engine.settings.max_recovery_attempts
    if record.task_name in engine.registry:
        definition = engine.registry.get(record.task_name)
        queue = queue or definition.queue
        max_attempts = definition.max_recovery_attempts
    built = [
        build_new_task(
            SendOptions(
                task_id=task_id, queue=queue, priority=schedule.priority, expires=schedule.expires
            ).request(record.task_name, schedule.args, schedule.kwargs),
            engine.codec,
            engine.settings.default_queue,
            max_attempts,
        )
        for task_id in task_ids
    ]
    if schedule.meta is None:
        return built
    return [task._replace(meta=schedule.meta) for task in built]


def fire_due(engine: Engine, schedule: StoredSchedule, due: list[dt.datetime]) -> FireResult:
    """Fire ``due`` (ascending) and move the cursor to its last element, if no other scheduler
    moved it first. The crash point ``after_fire_before_commit`` sits just before the commit."""
    record = schedule.record
    name = record.name
    return engine.schedules.fire(
        ScheduleFire(
            name=name,
            tasks=tuple(fire_tasks(engine, schedule, [fire_task_id(name, d) for d in due])),
            cursor=FireCursor(record.last_fired_at, record.active_since, format_due(due[-1])),
            before_commit=lambda: crashpoint("after_fire_before_commit", schedule=name),
        )
    )


def fire_without_cursor(engine: Engine, schedule: StoredSchedule, task_ids: list[str]) -> FireResult:
    """Insert fires without touching the cursor (manual trigger and backfill); task ids that
    exist already are kept, so a due time already fired is not fired again."""
    return engine.schedules.fire(
        ScheduleFire(name=schedule.record.name, tasks=tuple(fire_tasks(engine, schedule, task_ids)))
    )


def manual_task_id(schedule_name: str) -> str:
    """The id of a fire triggered by hand: never a due time's id, so it never stands in for one."""
    return f"sched-{schedule_name}-manual-{uuid.uuid4().hex[:12]}"
