"""What an operator (or a newer pgtasks' migration) does to the schema while pgtasks runs must
not break it: real worker and beat processes, and a producer, against the suite's PostgreSQL.

A statement a session has prepared (psycopg prepares one at its fifth run) is refused by the
server with "cached plan must not change result type" once another session adds a column to a
table it reads, at every later call on that session. The beat stopped firing (a traceback a
second), a worker's lease rounds failed, and ``get()`` raised FeatureNotSupported until the
process was restarted.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg

from pgtasks import Client
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of, text_of
from tests.support.processes import beat_process, stop, worker_process

APP = "tests.acceptance.apps.beat_app"  # one schedule, every second
TABLES = ("workflow_status", "operation_outputs", "executors", "queues", "workflow_schedules")


def _fires(ledger: Path) -> int:
    return sum(line.endswith(" ran") for line in lines_of(ledger))


def test_columns_added_under_prepared_statements_stop_nothing(
    pg_url: str, pg_server_url: str, tmp_path: Path
) -> None:
    schema = parse_qs(urlsplit(pg_url).query)["schema"][0]
    ledger = tmp_path / "ledger"
    client = Client(pg_url, pool_size=1)
    client.engine.admin.migrate()
    worker = worker_process(pg_url, ledger, "w1", app=APP, output=tmp_path / "w1.log")
    beat = beat_process(pg_url, tmp_path / "beat.log", app=APP)
    try:
        for _ in range(6):  # the producer's reads prepared too
            assert client.enqueue("beatapp.tick").get(timeout=60) == "ok"
        wait_for(lambda: _fires(ledger) >= 12, 60, "the schedule to fire six times")
        with psycopg.connect(pg_server_url, autocommit=True) as operator:
            for table in TABLES:
                operator.execute(f'ALTER TABLE "{schema}".{table} ADD COLUMN operator_note text')
        assert client.enqueue("beatapp.tick").get(timeout=30) == "ok"
        fired = _fires(ledger)
        wait_for(lambda: _fires(ledger) >= fired + 3, 30, "the schedule to fire again")
    finally:
        client.close()
        stop(beat)
        stop(worker)
    for log in ("w1.log", "beat.log"):
        out = text_of(tmp_path / log)
        for wrong in ("cached plan", "failed", "Traceback"):
            assert wrong not in out, out
