"""No log line on any path contains a ``secret_args`` value (issue 17, item 3): real worker
subprocesses (threads and prefork, arguments logged or not) run tasks whose secrets appear in
exception messages, reprs, chained exceptions, retries and outcomes that cannot be encoded,
and every line the run wrote (stdout and stderr) is searched for the secrets."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.sysdb.records import ClaimParams, Status
from pgtasks.worker import pools
from tests.security.apps import secret_paths_app
from tests.support.processes import stop, worker_process

TASKS = [
    "paths.internal",
    "paths.loud",
    "paths.chained",
    "paths.retry",
    "paths.deep_result",
    "paths.repr_result",
]


@pytest.fixture
def client(database_url: str) -> Iterator[Client]:
    client = Client(database_url)
    yield client
    client.close()


@pytest.mark.parametrize("pool", ["threads", "prefork"])
@pytest.mark.parametrize("app", ["logged", "quiet"])
def test_no_line_of_a_run_shows_a_secret(
    client: Client, database_url: str, tmp_path: Path, pool: str, app: str
) -> None:
    secrets = {name: f"SECRET{i}X{pool}{app}" for i, name in enumerate(TASKS)}
    worker = worker_process(
        database_url,
        tmp_path / "ledger",
        f"paths-{pool}-{app}",
        app=f"{secret_paths_app.__name__}:{app}",
        pool=pool,
    )
    try:
        ids = {name: client.enqueue(name, [secret]).id for name, secret in secrets.items()}
        for task_id in ids.values():
            assert client.engine.wait(task_id, timeout=60).status.is_terminal
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    leaked = [line for line in out.splitlines() if any(s in line for s in secrets.values())]
    assert leaked == [], "\n".join(leaked)
    for name, task_id in ids.items():  # every task ran and its end was logged
        assert f"[{task_id}] received" in out, out
        record = client.engine.get_task(task_id)
        assert record is not None
        if name == "paths.retry":
            assert (
                record.status is Status.SUCCESS
                and f"[{task_id}] retry: Retry in 0s: ValueError('try *** again')" in out
            )
        else:
            assert record.status is Status.ERROR and f"[{task_id}] raised unexpected" in out, (
                name,
                record.error,
            )
    assert f"[{ids['paths.internal']}] raised unexpected" in out and "CardError: card *** declined" in out
    assert "internal error" not in out
    if app == "logged":
        assert out.count('["***"]') >= len(TASKS)  # the received lines masked the argument


def test_the_internal_error_path_logs_no_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error inside pgtasks while running a task (not the task's own) ends the task ERROR,
    and its log line names only the error's type: its text may quote the arguments."""
    from pgtasks import App

    app = App("internal", database_url=f"sqlite:///{tmp_path / 'i.sqlite3'}")

    @app.task(name="internal.t", secret_args=("card",))
    def t(card: str) -> None:
        pass

    handle = t.delay("SECRET-CARD-1")
    record = app.engine.worker_api.claim(ClaimParams("w", app.engine.version(), ("default",), 1))[0]

    def broken(*_: object) -> None:
        raise RuntimeError("pgtasks bug while handling card SECRET-CARD-1")

    monkeypatch.setattr(pools, "execute_task", broken)
    caplog.set_level(logging.DEBUG)
    outcome = pools.run_guarded(app.engine, record, "w", [])
    assert outcome is not None and outcome.status is Status.ERROR  # ended once, not given back
    logged = "\n".join(caplog.text.splitlines())
    assert f"internal error running task internal.t[{handle.id}]: RuntimeError" in logged
    assert "SECRET-CARD-1" not in logged
    app.close()
