"""Idle workers are woken by NOTIFY from the enqueuing transaction, not by polling."""

from __future__ import annotations

import time

import psycopg

from pgtasks import App, Client
from tests.support.inprocess import running_worker


def test_notify_wakes_an_idle_worker_long_before_its_poll(pg_url: str) -> None:
    app = App("wake", database_url=pg_url, poll_interval=60, lease_seconds=120)

    @app.task
    def ping() -> str:
        return "pong"

    with running_worker(app) as worker:
        assert worker.listening
        ping.delay().get(timeout=30)  # the first claim may have raced the start; now idle
        started = time.monotonic()
        assert ping.delay().get(timeout=30) == "pong"
        assert time.monotonic() - started < 30  # a poll would have taken 60 s
    app.close()


def test_a_task_enqueued_in_a_rolled_back_transaction_wakes_nobody(pg_url: str) -> None:
    app = App("wake", database_url=pg_url, poll_interval=60, lease_seconds=120)
    client = Client(pg_url)

    @app.task(name="wake.job")
    def job() -> int:
        return 1

    with running_worker(app) as worker:
        assert worker.listening
        with psycopg.connect(pg_url.split("?")[0]) as conn:
            gone = client.enqueue("wake.job", conn=conn)
            conn.rollback()
            kept = client.enqueue("wake.job", conn=conn)
            conn.commit()
        assert kept.get(timeout=30) == 1
        assert gone.status is None
    client.close()
    app.close()


def test_sqlite_workers_poll(sqlite_url: str) -> None:
    app = App("wake", database_url=sqlite_url, poll_interval=0.05)

    @app.task
    def ping() -> str:
        return "pong"

    with running_worker(app) as worker:
        assert not worker.listening
        assert ping.delay().get(timeout=30) == "pong"
    app.close()
