"""Operator settings win (issue 17, item 8): a value set with `pgtasks queue set` stays
through worker restarts, until an operator changes it or the app's declared value changes;
real worker processes and the CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pgtasks import Client
from tests.support.cli import run_pgtasks
from tests.support.processes import stop, worker_process

APP = "tests.acceptance.apps.queues_app"


def start_worker(
    url: str, ledger: Path, name: str, queue: str, declared: int | None = None
) -> subprocess.Popen[str]:
    env = {} if declared is None else {"TUNED_CONCURRENCY": str(declared)}
    return worker_process(
        url, ledger, name, app=APP, lease_seconds=5, extra_args=("-Q", queue), extra_env=env
    )


def served(client: Client, url: str, ledger: Path, name: str, queue: str, declared: int | None = None) -> str:
    """Start a worker of ``queue``, wait until it has run a task (so it has written the app's
    declarations), stop it; return what it printed."""
    proc = start_worker(url, ledger, name, queue, declared)
    try:
        task = "queues.ping" if queue == "tuned" else "queues.other"
        client.enqueue(task, queue=queue).get(timeout=90)
    finally:
        out = stop(proc)
    return out


def stored(client: Client, queue: str) -> tuple[int | None, int | None]:
    [settings] = [q for q in client.engine.admin.queues((queue,))]
    return settings.concurrency, settings.worker_concurrency


def test_a_value_set_by_an_operator_survives_worker_restarts(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    served(client, database_url, ledger, "first", "tuned")
    assert stored(client, "tuned") == (2, 3)
    run_pgtasks("queue", "set", "tuned", "--concurrency", "7", url=database_url, check=True)
    served(client, database_url, ledger, "second", "other")  # a worker of another queue
    served(client, database_url, ledger, "third", "tuned")  # and one of this queue
    # The operator's value stays; the column the operator did not touch follows the app.
    assert stored(client, "tuned") == (7, 3)
    client.close()


def test_a_changed_declared_value_replaces_the_operators_and_says_so(database_url: str, ledger: Path) -> None:
    client = Client(database_url)
    served(client, database_url, ledger, "first", "tuned", declared=2)
    run_pgtasks("queue", "set", "tuned", "--concurrency", "7", url=database_url, check=True)
    out = served(client, database_url, ledger, "same", "tuned", declared=2)
    assert stored(client, "tuned") == (7, 3)
    assert "replace the running ones" not in out
    out = served(client, database_url, ledger, "changed", "tuned", declared=5)
    assert stored(client, "tuned") == (5, 3)
    assert "queue tuned: the app's declared settings replace the running ones: concurrency=7->5" in out
    # From then on the app's value is the live one again, and an operator can set it again.
    run_pgtasks("queue", "set", "tuned", "--concurrency", "1", url=database_url, check=True)
    served(client, database_url, ledger, "again", "tuned", declared=5)
    assert stored(client, "tuned") == (1, 3)
    client.close()
