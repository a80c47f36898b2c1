"""The tasks of the example: a report built in three durable async steps. Run them with

pgtasks worker -A examples.fastapi_app.tasks -P asyncio -c 1000
"""

from __future__ import annotations

import asyncio
import os

import pgtasks
from pgtasks import App

app = App("reports", database_url=os.environ.get("PGTASKS_DATABASE_URL") or os.environ.get("DATABASE_URL"))

PROGRESS = "progress"  # the stream the task writes its progress to

# How long each step pretends to wait on the network (the test makes it short).
STEP_SECONDS = float(os.environ.get("EXAMPLE_STEP_SECONDS", "1.0"))


@app.step(name="fetch")
async def fetch(url: str) -> int:
    """Stands for an HTTP call (httpx.AsyncClient().get(url)): the page's size."""
    await asyncio.sleep(STEP_SECONDS)
    return len(url) * 100


@app.step(name="summarize")
async def summarize(size: int) -> str:
    """Stands for an LLM call."""
    await asyncio.sleep(STEP_SECONDS)
    return f"{size} bytes"


@app.step(name="store")
async def store(report_id: str, summary: str) -> None:
    await asyncio.sleep(STEP_SECONDS)


@app.task(name="reports.build")
async def build_report(report_id: str, url: str) -> str:
    """Each step is checkpointed: after a crash the report resumes at the first unfinished step.
    Its progress goes to the stream ``progress`` (docs/waiting.md), which the web page follows."""
    size = await fetch(url)
    await pgtasks.write_stream_async(PROGRESS, {"position": 1, "name": "fetch"})
    summary = await summarize(size)
    await pgtasks.write_stream_async(PROGRESS, {"position": 2, "name": "summarize"})
    await store(report_id, summary)
    await pgtasks.write_stream_async(PROGRESS, {"position": 3, "name": "store"})
    await pgtasks.close_stream_async(PROGRESS)
    return summary
