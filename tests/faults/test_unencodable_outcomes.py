"""A task whose outcome cannot be encoded ends once, ERROR, with a reason saying what could not
be encoded; its body never runs again because pgtasks failed to record it (issue 17, item 1).

Real ``pgtasks worker`` subprocesses with both pools; every body writes one line to the effects
ledger per run."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.sysdb.records import Status
from tests.support.ledger import lines_of
from tests.support.processes import stop, worker_process

APP = "tests.faults.apps.outcome_app"

# task, args -> what the stored error must say
CASES = {
    "outcomes.deep_result": ([5000], "SerializationError", "nested too deeply"),
    "outcomes.bad_str": ([], "BadStr", "<message not recorded: str() of the BadStr raised RuntimeError>"),
    "outcomes.bad_args": ([], "ValueError", "{1, 2}"),
    "outcomes.deep_error": ([], "ValueError", "str() of the ValueError raised RecursionError"),
    "outcomes.huge_result": ([], "PayloadTooLarge", "over the limit of 100000 bytes"),
}


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_an_outcome_that_cannot_be_encoded_ends_the_task_once(
    database_url: str, tmp_path: Path, pool: str
) -> None:
    ledger = tmp_path / "ledger"
    client = Client(database_url)
    worker = worker_process(database_url, ledger, f"outcomes-{pool}", app=APP, pool=pool)
    try:
        ids = {
            name: client.enqueue(name, args, max_recovery_attempts=5).id for name, (args, *_) in CASES.items()
        }
        for task_id in ids.values():
            assert client.engine.wait(task_id, timeout=60).status.is_terminal
        fine = client.enqueue("outcomes.fine")
        assert fine.get(timeout=60) == 42  # the worker lives on
        assert worker.poll() is None
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    runs = collections.Counter(line.split(" ")[0] for line in lines_of(ledger))
    for name, (_, error_type, says) in CASES.items():
        record = client.engine.get_task(ids[name])
        assert record is not None and record.status is Status.ERROR, (name, record)
        assert record.recovery_attempts == 1, name
        assert runs[ids[name]] == 1, (name, runs)  # the body ran once
        error = json.loads(record.error or "{}")
        assert error["type"] == error_type and says in error["message"], (name, error)
        assert f"[{ids[name]}] raised unexpected" in out, out
    assert "internal error" not in out, out
    client.close()
