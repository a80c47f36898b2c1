"""pgqueuer's side of ``bench.peers``: run inside a venv holding pgqueuer and asyncpg (``make
bench`` builds ``.venv-pgqueuer``), never imported by pgtasks.

    python bench/pgqueuer_side.py install  DSN
    python bench/pgqueuer_side.py enqueue  DSN COUNT BATCH        -> {"seconds": s}
    python bench/pgqueuer_side.py drain    DSN COUNT BATCH_SIZE   -> {"seconds": s}
    python bench/pgqueuer_side.py latency  DSN RATE SECONDS       -> {"waits_ms": [...]}

``drain`` enqueues COUNT no-op jobs, then one QueueManager (one process, one event loop)
drains them with ``batch_size`` BATCH_SIZE in drain mode; the time runs from the first job's
start to the manager's exit (every job's outcome written). ``latency`` starts a manager, sends
single jobs paced at RATE/s from a second connection, and reports each job's wait from its
send to its start.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import timedelta

import asyncpg
from pgqueuer import AsyncpgDriver, Queries, QueueManager
from pgqueuer.models import Job
from pgqueuer.types import QueueExecutionMode

ENTRYPOINT = "noop"


async def install(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        await queries.install()
    finally:
        await conn.close()


async def enqueue(dsn: str, count: int, batch: int) -> float:
    conn = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        started = time.perf_counter()
        for offset in range(0, count, batch):
            n = min(batch, count - offset)
            await queries.enqueue([ENTRYPOINT] * n, [None] * n, [0] * n)
        return time.perf_counter() - started
    finally:
        await conn.close()


async def drain(dsn: str, count: int, batch_size: int) -> float:
    await enqueue(dsn, count, 1000)
    conn = await asyncpg.connect(dsn)
    first: list[float] = []
    manager = QueueManager(Queries(AsyncpgDriver(conn)))

    @manager.entrypoint(ENTRYPOINT)
    async def noop(job: Job) -> None:
        if not first:
            first.append(time.perf_counter())

    try:
        await manager.run(
            batch_size=batch_size, mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1)
        )
        return time.perf_counter() - first[0]
    finally:
        await conn.close()


async def latency(dsn: str, rate: float, seconds: float) -> list[float]:
    conn = await asyncpg.connect(dsn)
    producer_conn = await asyncpg.connect(dsn)
    manager = QueueManager(Queries(AsyncpgDriver(conn)))
    waits: list[float] = []
    sent = round(rate * seconds)

    @manager.entrypoint(ENTRYPOINT)
    async def noop(job: Job) -> None:
        waits.append((time.time_ns() - int((job.payload or b"0").decode())) / 1e6)
        if len(waits) >= sent:
            manager.shutdown.set()

    async def produce() -> None:
        queries = Queries(AsyncpgDriver(producer_conn))
        await asyncio.sleep(0.5)  # the manager listens by now
        start = time.perf_counter()
        for i in range(sent):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            await queries.enqueue(ENTRYPOINT, str(time.time_ns()).encode())

    try:
        producer = asyncio.create_task(produce())
        await asyncio.wait_for(manager.run(batch_size=10), timeout=seconds + 60)
        await producer
        return waits
    finally:
        await conn.close()
        await producer_conn.close()


def main(argv: list[str]) -> int:
    command, dsn, *rest = argv
    if command == "install":
        asyncio.run(install(dsn))
        out: dict[str, object] = {}
    elif command == "enqueue":
        out = {"seconds": asyncio.run(enqueue(dsn, int(rest[0]), int(rest[1])))}
    elif command == "drain":
        out = {"seconds": asyncio.run(drain(dsn, int(rest[0]), int(rest[1])))}
    elif command == "latency":
        out = {"waits_ms": asyncio.run(latency(dsn, float(rest[0]), float(rest[1])))}
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
