"""Retention end to end: workers prune finished tasks past result_expires on their own,
`pgtasks prune` (and --dry-run) from the command line, and Celery's result_expires and
forget()."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from pgtasks import App
from pgtasks.compat import Celery
from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.records import ClaimParams, CompleteParams, NewTask, Outcome, Status
from pgtasks.worker import Worker, WorkerOptions
from pgtasks.worker.pruner import Pruner
from tests.support.cli import run_pgtasks
from tests.support.inprocess import running_worker, wait_for


def test_workers_prune_what_is_past_result_expires(database_url: str) -> None:
    app = App("pruned", database_url=database_url, result_expires=0.05)

    @app.task(name="r.add")
    def add(x: int, y: int) -> int:
        return x + y

    # The first worker never prunes within the test, so the results are read before any pruning
    # (a 50 ms expiry would otherwise race the reads); the second worker prunes.
    with running_worker(app, prune_interval=3600):
        sent = [add.delay(i, i) for i in range(5)]
        assert [r.get(timeout=30) for r in sent] == [0, 2, 4, 6, 8]
    worker = Worker(
        app.engine, WorkerOptions(queues=("default",), concurrency=2, prune_interval=0.05, pool="threads")
    )
    worker.start()
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(
            lambda: all(app.engine.get_task(r.id) is None for r in sent),
            timeout=30,
            what="the worker to prune the finished tasks",
        )
    finally:
        worker.shutdown(grace=10)
        thread.join(10)
        app.close()


def test_result_expires_none_keeps_everything_and_bad_values_are_refused(database_url: str) -> None:
    app = App("kept", database_url=database_url, result_expires=None)
    assert app.engine.admin.prune() == {} and app.engine.admin.prunable() == {}
    with pytest.raises(ConfigurationError, match="result_expires must be a positive number of seconds"):
        App("bad", database_url=database_url, result_expires=-1)
    with pytest.raises(ConfigurationError, match="at most a century"):  # pruning failed on bigint
        App("huge", database_url=database_url, result_expires=1e300)
    app.close()


def test_the_prune_command_and_its_dry_run(database_url: str) -> None:
    app = App("cli-prune", database_url=database_url)

    @app.task(name="r.noop")
    def noop() -> None:
        return None

    with running_worker(app):
        ids = [noop.delay().id for _ in range(3)]
        for task_id in ids:
            app.AsyncResult(task_id).get(timeout=30)
    url = database_url
    wait_for(lambda: app.engine.admin.prunable(0) == {"default": 3}, what="three prunable tasks")
    dry = run_pgtasks("prune", "--older-than", "0", "--dry-run", url=url)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == ["default: 3", "would delete 3 finished tasks"]
    assert all(app.engine.get_task(i) is not None for i in ids)
    kept = run_pgtasks("prune", url=url)  # result_expires (a day): nothing is that old
    assert kept.stdout.strip() == "deleted 0 finished tasks", kept.stderr
    done = run_pgtasks("prune", "--older-than", "0", url=url)
    assert done.stdout.splitlines() == ["default: 3", "deleted 3 finished tasks"], done.stderr
    assert all(app.engine.get_task(i) is None for i in ids)
    for age in ("-5", "1e300"):  # 1e300: a traceback (bigint out of range)
        bad = run_pgtasks("prune", "--older-than", age, url=url)
        assert bad.returncode == 2 and "--older-than must be seconds from 0 to a century" in bad.stderr
    app.close()


def test_celery_result_expires_and_forget(sqlite_url: str) -> None:
    app = Celery("celery-retention", broker=sqlite_url)
    assert app.settings.result_expires == 86400.0  # Celery's default: one day
    app.conf.result_expires = dt.timedelta(hours=2)
    assert app.settings.result_expires == 7200.0
    app.conf.result_expires = None
    assert app.settings.result_expires is None

    @app.task(name="c.echo")
    def echo(x: int) -> int:
        return x

    with running_worker(app, queues=("celery",)):
        result = echo.delay(7)
        assert result.get(timeout=30) == 7
    assert result.state == "SUCCESS"
    result.forget()
    assert result.state == "PENDING" and app.engine.get_task(result.id) is None
    app.close()


def test_a_queue_keeps_its_tasks_for_its_own_age(database_url: str) -> None:
    # The app keeps results forever; the "brief" queue declares 50 ms of its own.
    app = App("per-queue", database_url=database_url, result_expires=None)
    app.queue("brief", result_expires=dt.timedelta(milliseconds=50))

    @app.task(name="r.twice")
    def twice(x: int) -> int:
        return 2 * x

    with running_worker(app, queues=("brief", "default"), prune_interval=3600):
        brief = [twice.apply_async((i,), queue="brief") for i in range(3)]
        kept = [twice.delay(i) for i in range(3)]
        assert [r.get(timeout=30) for r in brief + kept] == [0, 2, 4] * 2
    worker = Worker(
        app.engine, WorkerOptions(queues=("brief", "default"), prune_interval=0.05, pool="threads")
    )
    worker.start()
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(
            lambda: all(app.engine.get_task(r.id) is None for r in brief),
            timeout=30,
            what="the worker to prune the brief queue",
        )
        assert all(app.engine.get_task(r.id) is not None for r in kept)
    finally:
        worker.shutdown(grace=10)
        thread.join(10)
        app.close()


def test_the_queue_command_sets_a_queues_retention(database_url: str) -> None:
    def kept(*value: str) -> str:
        """The queue table's "kept" column for "reports" after ``queue set``."""
        done = run_pgtasks("queue", "set", "reports", *value, url=database_url)
        assert done.returncode == 0, done.stderr
        header, *rows = done.stdout.splitlines()
        column = header.split().index("kept")
        row = next(line for line in rows if line.startswith("reports "))
        return row.split()[column - 2]  # the headers "per worker" and "rate limit" are two words each

    assert kept("--result-expires", "604800") == "168h00m"
    assert kept("--result-expires", "never") == "never"
    assert kept("--result-expires", "default") == "default"
    for bad in ("-1", "0", "soon", "nan"):
        refused = run_pgtasks("queue", "set", "reports", "--result-expires", bad, url=database_url)
        assert refused.returncode == 2, refused.stdout
        assert "--result-expires takes a positive number of seconds, 'never' or 'default'" in refused.stderr
    for expires in (-3, 1e300):  # 1e300 stopped every pruning round (bigint out of range)
        with pytest.raises(ConfigurationError, match="result_expires_sec must be a number of seconds from 0"):
            App("bad-queue", database_url=database_url).queue("q", result_expires=expires)
    with pytest.raises(ConfigurationError, match="concurrency must be an integer from 1 to 2,147,483,647"):
        App("bad-queue", database_url=database_url).queue("q", concurrency=2**31)  # was a traceback


def test_a_pruning_round_goes_on_while_more_is_due(database_url: str) -> None:
    # 2,500 finished tasks and steps of one batch (1,000): one round deletes them all, so
    # pruning keeps up with any rate rather than a fixed number of batches a minute.
    app = App("round", database_url=database_url, result_expires=0.001)
    db = app.engine.database.sysdb
    db.tasks_enqueue([NewTask(f"r{i}", "r.noop", '{"args":[],"kwargs":{}}', "default") for i in range(2500)])
    claimed = db.tasks_claim(ClaimParams("w1", app.version(), ("default",), 2500))
    outcomes = tuple(Outcome(t.task_id, Status.SUCCESS, "null", claim_token=t.claim_token) for t in claimed)
    assert len(db.tasks_complete(CompleteParams("w1", outcomes))) == 2500
    wait_for(lambda: app.engine.admin.prunable() == {"default": 2500}, what="2,500 tasks past their age")
    counted: list[dict[str, int]] = []
    pruner = Pruner(app.engine.worker_api, interval=60, on_pruned=counted.append, batches_per_step=1)
    assert pruner.round() == {"default": 2500}
    assert counted == [{"default": 2500}] and app.engine.admin.prunable() == {}
    app.close()
