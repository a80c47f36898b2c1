"""Connections that heal (issue 17, items 6 and 10): after a PostgreSQL restart (fast or
immediate) or a ``pg_terminate_backend`` of every session, the next operation on each path
reconnects and succeeds without an error, and an enqueue sent while the server is down is
retried with its id until the server is back; one warning per outage. A server of the
module's own (tests/support/pgserver.py), restarted by the tests."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from pgtasks import App, Client
from tests.support.inprocess import running_worker, wait_for
from tests.support.pgserver import PostgresServer
from tests.support.processes import stop, worker_process
from tests.support.schemas import new_schema_name, with_schema

RETRYING = "is unavailable; retrying for up to"


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    own = PostgresServer().start()
    try:
        yield own
    finally:
        own.destroy()


@pytest.fixture
def url(server: PostgresServer) -> str:
    return with_schema(server.url, new_schema_name("heal_"))


def terminate_every_session(server: PostgresServer) -> int:
    with psycopg.connect(server.url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'pgtasks' AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def fill_the_pool(client: Client, n: int = 6) -> None:
    """Several pooled sessions, all idle afterwards (each goes stale at the restart)."""
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda _: client.enqueue("heal.job"), range(3 * n)))


@pytest.mark.parametrize("how", ["fast", "immediate", "terminate"])
def test_a_producer_sends_and_reads_after_its_sessions_died(
    server: PostgresServer, url: str, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    client = Client(url)
    fill_the_pool(client)
    if how == "terminate":
        assert terminate_every_session(server) >= 2
    else:
        server.stop(how)
        server.launch()
    # Every pooled session is dead; each call must succeed (it used to raise
    # DatabaseUnavailable once per pooled connection).
    handles = [client.enqueue("heal.job") for _ in range(12)]
    assert all(h.status == "ENQUEUED" for h in handles)
    with ThreadPoolExecutor(6) as pool:
        assert len(list(pool.map(lambda _: client.enqueue("heal.job").id, range(12)))) == 12
    client.close()
    # The pool's line for each session it drops, on top of pgtasks' own (about 300 a minute from
    # a worker whose sessions an operator kept ending).
    assert "discarding" not in caplog.text, caplog.text


def test_an_enqueue_during_an_outage_is_retried_with_its_id(
    server: PostgresServer, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client(url)
    fill_the_pool(client, 2)
    server.stop("fast")
    restarted = threading.Event()

    def restart_once_the_producer_waits() -> None:
        wait_for(lambda: RETRYING in caplog.text, timeout=60, what="the producer to retry")
        server.launch()
        restarted.set()

    caplog.set_level(logging.WARNING, logger="pgtasks.sysdb")
    helper = threading.Thread(target=restart_once_the_producer_waits)
    helper.start()
    try:
        handle = client.enqueue("heal.job", task_id="sent-while-down")  # no error
    finally:
        helper.join(90)
    assert restarted.is_set() and handle.id == "sent-while-down"
    with psycopg.connect(server.url) as conn:
        schema = url.rsplit("schema=", 1)[1]
        [(count,)] = conn.execute(
            f'SELECT count(*) FROM "{schema}".workflow_status WHERE workflow_uuid = %s', ("sent-while-down",)
        ).fetchall()
    assert count == 1
    assert caplog.text.count(RETRYING) == 1  # one warning for the outage, not one per attempt
    assert "error connecting" not in caplog.text  # nor one from the pool for each of its attempts
    assert "reachable again after" in caplog.text
    client.close()


def test_a_worker_and_its_results_heal_after_every_session_is_terminated(
    server: PostgresServer, url: str
) -> None:
    app = App("heal", database_url=url, poll_interval=60, lease_seconds=4)

    @app.task(name="heal.double")
    def double(x: int) -> int:
        return 2 * x

    with running_worker(app) as worker:
        assert double.delay(1).get(timeout=30) == 2
        assert terminate_every_session(server) >= 2
        # The producer's enqueue, the worker's claim, heartbeats and outcome, get()'s reads.
        assert [double.delay(i).get(timeout=60) for i in range(2, 5)] == [4, 6, 8]
        lease = worker._lease
        assert lease is not None
        lease.tick()  # a heartbeat round on the healed sessions raises nothing
    app.close()


def test_update_state_in_a_prefork_child_after_a_restart(
    server: PostgresServer, url: str, tmp_path: Path
) -> None:
    """A prefork child's own sessions die with the server; its update_state must not turn
    the task into a FAILURE."""
    ledger = tmp_path / "ledger"
    proc = worker_process(
        url,
        ledger,
        "heal-prefork",
        app="tests.compat.apps.canvas_app",
        pool="prefork",
        lease_seconds=5,
        extra_args=("-Q", "default"),
    )
    client = Client(url)
    try:
        release = tmp_path / "release"
        release.touch()
        assert (
            client.enqueue("tests.compat.apps.canvas_app.progress", [str(release)]).get(timeout=90)
            == "released"
        )
        server.stop("fast")
        server.launch()
        handle = client.enqueue("tests.compat.apps.canvas_app.progress", [str(release)])
        assert handle.get(timeout=90) == "released"
        assert handle.status == "SUCCESS"
    finally:
        out = stop(proc)
        client.close()
    assert out.count(RETRYING) <= 2, out  # the parent's and the child's sysdb: once each at most
