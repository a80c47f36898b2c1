"""Pausing and resuming a queue with real worker processes: `pgtasks queue pause|resume` and
``pause_queue``/``resume_queue`` on the management API."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pgtasks import Client
from tests.support.cli import run_pgtasks
from tests.support.ledger import intervals
from tests.support.processes import stop, worker_process

FLOW_APP = "tests.acceptance.apps.flow_app"


def _worker(url: str, ledger: Path, queues: str) -> subprocess.Popen[str]:
    return worker_process(url, ledger, "pauser", app=FLOW_APP, concurrency=4, extra_args=("-Q", queues))


def _statuses(client: Client, ids: list[str]) -> set[str]:
    return {client.AsyncResult(i).status for i in ids}


def test_cli_pause_holds_a_queue_across_a_worker_start_and_resume_releases_it(
    database_url: str, ledger: Path
) -> None:
    client = Client(database_url)
    # "limited" is declared by the app: the worker writes its settings at start, which must
    # not resume it.
    paused = run_pgtasks("queue", "pause", "limited", url=database_url)
    assert paused.returncode == 0, paused.stderr
    assert [line.split()[-1] for line in paused.stdout.splitlines() if line.startswith("limited")] == ["yes"]
    held = [client.enqueue("flow.work", [f"held{i}", 0.0], queue="limited").id for i in range(3)]
    proc = _worker(database_url, ledger, "limited,open")
    try:
        # The worker claims both queues in one statement: once it has run a task sent after
        # the held ones, its claims have seen them and left them alone.
        client.enqueue("flow.work", ["control", 0.0], queue="open").get(timeout=60)
        assert _statuses(client, held) == {"ENQUEUED"}
        resumed = run_pgtasks("queue", "resume", "limited", url=database_url)
        assert resumed.returncode == 0, resumed.stderr
        assert [r.get(timeout=60) for r in map(client.AsyncResult, held)] == ["held0", "held1", "held2"]
    finally:
        out = stop(proc)
    assert proc.returncode == 0, out
    assert sorted(s.label for s in intervals(ledger)) == ["control", "held0", "held1", "held2"]
    client.close()


def test_api_pause_stops_claims_until_resumed(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    proc = _worker(database_url, ledger, "open,side")
    try:
        client.enqueue("flow.work", ["first", 0.0], queue="open").get(timeout=60)
        client.pause_queue("open")
        [stored] = client.engine.admin.queues(("open",))
        assert stored.paused
        waiting = [client.enqueue("flow.work", [f"later{i}", 0.0], queue="open").id for i in range(2)]
        client.enqueue("flow.work", ["control", 0.0], queue="side").get(timeout=60)
        assert _statuses(client, waiting) == {"ENQUEUED"}
        client.resume_queue("open")
        assert not client.engine.admin.queues(("open",))[0].paused
        assert [client.AsyncResult(i).get(timeout=60) for i in waiting] == ["later0", "later1"]
    finally:
        out = stop(proc)
    assert proc.returncode == 0, out
    client.close()


def test_bad_queue_names_are_refused_with_the_rule(database_url: str) -> None:
    done = run_pgtasks("queue", "pause", "no spaces", url=database_url)
    assert done.returncode == 2
    assert "invalid queue name 'no spaces': use letters, digits and _ - . : @" in done.stderr
