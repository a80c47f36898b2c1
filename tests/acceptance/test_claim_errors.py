"""The claim loop tells a bug from an outage: a statement the database refuses stops the
worker (exit code 1, the error logged with its traceback) instead of being retried forever
as a warning."""

from __future__ import annotations

from pathlib import Path

import psycopg

from pgtasks import Client
from pgtasks.sysdb.urls import parse_database_url
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process


def test_a_claim_the_database_refuses_stops_the_worker_with_its_error(pg_url: str, tmp_path: Path) -> None:
    client = Client(pg_url)
    client.engine.admin.migrate()
    log = tmp_path / "worker.log"
    worker = worker_process(pg_url, tmp_path / "effects.log", "broken", output=log)
    try:
        wait_for(lambda: "broken ready." in log.read_text(), timeout=60, what="the worker to start")
        # A real programming error for every claim from now on: the claim statement reads a
        # column this schema no longer has.
        target = parse_database_url(pg_url)
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f'ALTER TABLE "{target.schema}".workflow_status RENAME COLUMN enqueue_seq TO moved')
        assert worker.wait(timeout=60) == 1  # non-zero: a supervisor sees it, nothing loops
    finally:
        stop(worker)
        client.close()
    text = log.read_text()
    assert "claiming failed with an error that retrying cannot fix" in text
    assert "Traceback (most recent call last)" in text and "enqueue_seq" in text
    assert "the claim loop stopped unexpectedly; shutting down" in text
    assert "cannot claim tasks" not in text  # never taken for an outage
