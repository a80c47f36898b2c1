"""Tasks that harm their own process: the worker survives them, records each outcome under its
own task, and goes on with the next tasks. (What is tested is the worker's process, the same
on either database: PostgreSQL only.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgtasks import Client
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

APP = "tests.acceptance.apps.hostile_app"


@pytest.mark.parametrize("pool", ["threads", "solo", "prefork"])
def test_a_task_that_closes_the_standard_streams_does_not_silence_or_stop_the_worker(
    pg_url: str, ledger: Path, pool: str
) -> None:
    client = Client(pg_url)
    worker = worker_process(pg_url, ledger, "hs", app=APP, pool=pool, concurrency=1)
    try:
        assert client.enqueue("hostile.closes", ["stderr"]).get(timeout=60) == "stderr"
        assert client.enqueue("hostile.closes", ["stdout"]).get(timeout=60) == "stdout"
        after = client.enqueue("hostile.speaks", ["after"])
        assert after.get(timeout=60) == "after"
        assert worker.poll() is None
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    assert "task hostile.closes closed sys.stderr; the worker opened it again" in out
    assert "task hostile.closes closed sys.stdout; the worker opened it again" in out
    for line in ("after on stdout", "after on stderr", "after as a warning", "after logged"):
        assert line in out
    assert f"Task hostile.speaks[{after.id}] succeeded" in out  # the worker's own log goes on
    client.close()


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_a_child_forked_by_a_task_exits_instead_of_going_on_as_the_worker(
    pg_url: str, ledger: Path, pool: str
) -> None:
    client = Client(pg_url)
    worker = worker_process(pg_url, ledger, "fk", app=APP, pool=pool, concurrency=1)
    try:
        # The child's exit status: 0 after a return, 1 after an exception, sys.exit's code;
        # forked in the task's body, then in a step.
        for in_step in (False, True):
            for child_does, status in (("return", 0), ("raise", 1), ("exit", 7)):
                handle = client.enqueue("hostile.forks", [child_does, in_step])
                assert handle.get(timeout=60) == ["parent", status]
        echoes = [client.enqueue("hostile.echo", [i]) for i in range(4)]
        results = [handle.get(timeout=60) for handle in echoes]
        assert [value for value, _ in results] == list(range(4))  # each outcome is its own task's
        assert len({pid for _, pid in results}) == 1  # one process served them: no forked copy
        assert worker.poll() is None
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    assert out.count("returned from the task") == 3
    assert out.count("returned from the step 'forking_step'") == 3
    assert "End a forked child with os._exit()." in out
    client.close()


def test_a_step_run_in_a_process_the_task_forked_is_a_plain_call(pg_url: str, ledger: Path) -> None:
    # The forked process shares the task's context: its step must not be recorded as the
    # task's (the parent's step would then replay the child's value after a crash).
    client = Client(pg_url)
    worker = worker_process(pg_url, ledger, "sc", app=APP, pool="threads", concurrency=1)
    try:
        handle = client.enqueue("hostile.step_in_child")
        assert handle.get(timeout=60) == ["parent", 5]
    finally:
        stop(worker)
    steps = client.engine.admin.steps(handle.id)
    assert [(s.function_id, s.output) for s in steps] == [(1, '"parent"')]
    client.close()


def test_a_prefork_task_outlasting_the_shutdown_grace_is_given_back_once_not_reported_dead(
    pg_url: str, ledger: Path, tmp_path: Path
) -> None:
    client = Client(pg_url)
    marker = tmp_path / "first-run"
    worker = worker_process(
        pg_url, ledger, "og", app=APP, pool="prefork", concurrency=1, extra_args=("--shutdown-grace", "1")
    )
    try:
        handle = client.enqueue("hostile.outstays", [str(marker)])
        wait_for(marker.exists, timeout=60, what="the task to start")
    finally:
        out = stop(worker)  # SIGTERM: the child ignores it and sleeps on past the grace period
    assert worker.returncode == 0, out
    record = client.get_task(handle.id, steps=False)
    # The worker's output says why if the given-back outcome was not written in the final window.
    assert record is not None and record.status.value == "ENQUEUED" and record.recovery_attempts == 1, out
    reason = (
        "its process was stopped: the worker shut down cold (a second stop signal, or the end of its "
        "shutdown grace period)"
    )
    assert json.loads(record.error or "{}")["message"] == reason
    # it was: "the process running task <id> died (exit code None)", at ERROR
    assert f"task {handle.id} was still running; {reason}; it will run again" in out, out
    assert "died" not in out, out
    again = worker_process(pg_url, ledger, "og2", app=APP, pool="prefork", concurrency=1)
    try:
        assert handle.get(timeout=60) == "ran again"  # nothing lost
    finally:
        stop(again)
    client.close()
