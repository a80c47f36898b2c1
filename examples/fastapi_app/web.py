"""A FastAPI app that sends tasks from async code (the example of docs/async.md).

- ``POST /reports`` records the report in the application's own table and enqueues its task on
  the same ``psycopg.AsyncConnection``, in one transaction: both exist, or neither.
- ``GET /reports/{task_id}/events`` streams the task's progress as server-sent events: one
  ``step`` event per value the task wrote to its ``progress`` stream (``read_stream``, which
  follows the running task), then ``done`` (or ``failed``).

    DATABASE_URL=postgresql://... uvicorn examples.fastapi_app.web:app
    pgtasks worker -A examples.fastapi_app.tasks -P asyncio -c 1000

``DATABASE_URL`` is the application's database (a libpq URL); pgtasks uses
``PGTASKS_DATABASE_URL`` when set (for example with ``?schema=``), else the same database.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException
from fastapi.responses import StreamingResponse
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from examples.fastapi_app.tasks import PROGRESS, build_report
from examples.fastapi_app.tasks import app as tasks_app

pool = AsyncConnectionPool(os.environ["DATABASE_URL"], open=False)


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    await pool.open()
    async with pool.connection() as conn:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS example_reports"
            " (id text PRIMARY KEY, url text NOT NULL, task_id text)"
        )
    yield
    await pool.close()
    tasks_app.close()


api = FastAPI(lifespan=lifespan)
app = api  # what uvicorn is pointed at


class ReportRequest(BaseModel):
    url: str
    fail_after_enqueue: bool = False  # for the demonstration: the request fails, nothing is sent


@api.post("/reports", status_code=201)
async def create_report(request: ReportRequest) -> dict[str, str]:
    report_id = str(uuid.uuid4())
    async with pool.connection() as conn, conn.transaction():
        sent = await build_report.apply_async_async((report_id, request.url), conn=conn)
        await conn.execute(
            "INSERT INTO example_reports (id, url, task_id) VALUES (%s, %s, %s)",
            (report_id, request.url, sent.id),
        )
        if request.fail_after_enqueue:
            raise HTTPException(status_code=500, detail="failed after the enqueue: rolled back")
    return {"report_id": report_id, "task_id": sent.id}


@api.get("/reports/{task_id}/events")
async def report_events(task_id: str) -> StreamingResponse:
    if await asyncio.to_thread(tasks_app.get_task, task_id) is None:
        raise HTTPException(status_code=404, detail=f"no task {task_id}")
    return StreamingResponse(_progress(task_id), media_type="text/event-stream")


async def _progress(task_id: str) -> AsyncIterator[str]:
    """A ``step`` event for each value of the task's progress stream, then its outcome."""
    values = tasks_app.read_stream(task_id, PROGRESS)  # follows the task while it runs
    while (value := await asyncio.to_thread(next, values, None)) is not None:
        yield _event("step", value)
    try:
        yield _event("done", {"result": await tasks_app.AsyncResult(task_id).get_async()})
    except Exception as exc:  # the task's own error, as get() raises it
        yield _event("failed", {"error": f"{type(exc).__name__}: {exc}"})


def _event(kind: str, data: object) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"
