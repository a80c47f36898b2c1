"""Celery's worker_prefetch_multiplier on the prefork pool: 1 claims only for idle processes
(`--prefetch-multiplier 0` leaves it to the setting, as Celery's flag does),
a value set bounds every claim, the default (or 0) lets a backlog of short tasks be claimed
further ahead, and a value that is not a whole number is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.engine.options import SendOptions
from pgtasks.sending import send_many
from tests.support.cli import run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import largest_claim_of_drain, stop, worker_process

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
        extra_args=("-Q", "celery", "--prefetch-multiplier", "0"),  # Celery's 0: the setting decides
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


@pytest.mark.parametrize(("setting", "most"), [(None, None), ("0", None), ("4", 4)], ids=["unset", "0", "4"])
def test_the_app_setting_bounds_claims_and_its_default_claims_short_tasks_further_ahead(
    pg_url: str, tmp_path: Path, setting: str | None, most: int | None
) -> None:
    client = Client(pg_url)
    send_many(client.engine, "prefetch.brief", [()] * 2000, None, SendOptions(queue="celery"))
    log = tmp_path / "worker.log"
    worker = worker_process(
        pg_url,
        tmp_path / "ledger",
        "pfd",
        app=APP,
        pool="prefork",
        concurrency=1,
        extra_env={"PREFETCH_MULTIPLIER": setting} if setting is not None else {},
        extra_args=("-Q", "celery"),
        output=log,
    )
    largest = largest_claim_of_drain(client, worker, log, 2000)
    if most is None:
        assert largest > 4
    else:
        assert largest <= most
    client.close()
