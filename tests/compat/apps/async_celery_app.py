"""A Celery app whose tasks are coroutines, for `pgtasks worker -P asyncio`: written only
against Celery's public API (plus pgtasks' async waits, used by the test)."""

from __future__ import annotations

import asyncio
import os

from celery import Celery, Task, shared_task

from tests.compat.apps.ledger import note

app = Celery("async_celery", broker=os.environ.get("PGTASKS_DATABASE_URL"))

_arrived = 0


class Noted(Task):
    def on_success(self, retval: object, task_id: str, args: object, kwargs: object) -> None:
        note("success", task_id, retval)


@shared_task(bind=True, base=Noted)
async def barrier(self: Task, n: int) -> int:
    """Returns once ``n`` of these run at the same time (on the worker's one event loop)."""
    global _arrived
    _arrived += 1
    for _ in range(3000):
        if _arrived >= n:
            return n
        await asyncio.sleep(0.01)
    raise TimeoutError(f"only {_arrived} of {n} ran at once ({self.request.id})")


@shared_task
async def double(x: int) -> int:
    await asyncio.sleep(0.01)
    return 2 * x


@shared_task
def sync_square(x: int) -> int:
    return x * x
