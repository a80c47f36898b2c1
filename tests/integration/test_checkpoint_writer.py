"""The group-commit checkpoint writer on a real database: threads and coroutines get their own
answers, ownership reads ride along, and a coroutine that stops waiting (a time limit
cancels it) neither loses its checkpoint nor stops the writer."""

from __future__ import annotations

import asyncio
import time

from pgtasks.engine.checkpoints import CheckpointWriter
from pgtasks.sysdb import SystemDatabase
from pgtasks.sysdb.records import StepWrite, TaskOwner
from tests.integration.sysdb.support import claim, new, step


def test_writer_answers_threads_and_coroutines_and_outlives_a_cancelled_wait(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b")])
    claim(sysdb)
    writer = CheckpointWriter(sysdb)
    try:
        assert writer.record(step("a", 1)) is StepWrite.RECORDED

        async def scenario() -> list[object]:
            waiting = asyncio.ensure_future(writer.record_async(step("a", 2)))
            await asyncio.sleep(0)  # queued: now it stops waiting, as under a time limit
            waiting.cancel()
            answers = asyncio.gather(
                writer.record_async(step("b", 1)),
                writer.record_async(step("b", 2, executor="w2")),
                writer.owned_async(TaskOwner("a", "w1")),
                writer.owned_async(TaskOwner("a", "w2")),
            )
            return list(await asyncio.wait_for(answers, 30))

        assert asyncio.run(scenario()) == [StepWrite.RECORDED, StepWrite.NOT_OWNER, True, False]
        deadline = time.monotonic() + 30
        while [s.function_id for s in sysdb.steps_get("a")] != [1, 2]:  # the step ran: kept
            assert time.monotonic() < deadline, sysdb.steps_get("a")
            time.sleep(0.01)
        assert writer.record(step("a", 3)) is StepWrite.RECORDED
    finally:
        writer.stop()
