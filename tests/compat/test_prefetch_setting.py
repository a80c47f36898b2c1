"""Celery's worker_prefetch_multiplier on the prefork pool: 1 claims only for idle processes,
and a value that is not a whole number is refused by name."""

from __future__ import annotations

from pathlib import Path

from pgtasks import Client
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

APP = "tests.compat.apps.prefetch_app"


def test_a_prefetch_multiplier_of_one_claims_only_for_idle_processes(pg_url: str, tmp_path: Path) -> None:
    client = Client(pg_url)
    first = client.enqueue("prefetch.nap", [1.5], queue="celery")
    rest = [client.enqueue("prefetch.nap", [0.1], queue="celery") for _ in range(3)]
    worker = worker_process(
        pg_url,
        tmp_path / "ledger",
        "pf1",
        app=APP,
        pool="prefork",
        concurrency=1,
        extra_env={"PREFETCH_MULTIPLIER": "1"},
        extra_args=("-Q", "celery"),
    )
    try:

        def held() -> list[str]:
            return [
                t.task_id
                for t in client.list_tasks(status=["PENDING"], limit=10)
                if t.executor_id == "celery@pf1"
            ]

        wait_for(lambda: held() == [first.id], what="the first task to be claimed")
        running = held()
        assert running == [first.id]  # nothing claimed ahead, though three more wait
        assert [h.get(timeout=60) for h in [first, *rest]] == ["rested"] * 4
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    client.close()


def test_a_prefetch_multiplier_that_is_not_a_whole_number_is_refused(sqlite_url: str) -> None:
    bad = run_pgtasks(
        "worker",
        "-A",
        APP,
        "-P",
        "prefork",
        env={"PGTASKS_DATABASE_URL": sqlite_url, "PREFETCH_MULTIPLIER": "lots"},
    )
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "worker_prefetch_multiplier must be a whole number >= 0, not 'lots'" in bad.stderr
