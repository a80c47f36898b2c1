"""A real worker's Prometheus endpoint (``--metrics-port``): tasks that succeed, fail and
retry, counted exactly in the worker's main process for both the threads and prefork pools,
scraped over HTTP and parsed with prometheus-client's own parser."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pgtasks import Client
from tests.support.cli import REPO, run_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

METERED_APP = "tests.acceptance.apps.metered_app"
OK, FAIL, FLAKY, RETRIES = 5, 3, 2, 2  # FLAKY tasks each ask RETRIES times to run again


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the endpoint: (name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain; version=")
        text = answer.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_worker_metrics_count_every_outcome(database_url: str, tmp_path: Path, pool: str) -> None:
    log = tmp_path / "worker.log"
    args = ("--metrics-port", "0", "--metrics-address", "127.0.0.1")
    proc = worker_process(
        database_url,
        tmp_path / "ledger",
        f"metered-{pool}",
        app=METERED_APP,
        extra_args=args,
        output=log,
        pool=pool,
    )
    client = Client(database_url)
    try:
        wait_for(lambda: "/metrics" in log.read_text(), 60, "the metrics server to start")
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/metrics", log.read_text()).group(1))  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}/metrics"
        before = _scrape(url)
        assert _value(before, "pgtasks_worker_pool_size") == 2
        assert _value(before, "pgtasks_worker_running_tasks") == 0
        assert _value(before, "pgtasks_task_runtime_seconds_count", queue="default") == 0

        oks = [client.enqueue("metered.ok", [i]) for i in range(OK)]
        fails = [client.enqueue("metered.fail", ["no"]) for _ in range(FAIL)]
        flakies = [client.enqueue("metered.flaky", [RETRIES]) for _ in range(FLAKY)]
        assert [r.get(timeout=60) for r in oks] == [i + 1 for i in range(OK)]
        assert [r.get(timeout=60) for r in flakies] == [f"after {RETRIES} retries"] * FLAKY
        for result in fails:
            with pytest.raises(ValueError, match=r"^no$"):
                result.get(timeout=60)

        # Counted before each outcome is handed to the completer: visible once results are.
        after = _scrape(url)
        runs = {"metered.ok": OK, "metered.fail": FAIL, "metered.flaky": FLAKY * (RETRIES + 1)}
        for task, n in runs.items():
            assert _value(after, "pgtasks_tasks_started_total", queue="default", task=task) == n, task
        assert _value(after, "pgtasks_tasks_succeeded_total", queue="default", task="metered.ok") == OK
        assert _value(after, "pgtasks_tasks_succeeded_total", queue="default", task="metered.flaky") == FLAKY
        assert _value(after, "pgtasks_tasks_succeeded_total", queue="default", task="metered.fail") == 0
        assert _value(after, "pgtasks_tasks_failed_total", queue="default", task="metered.fail") == FAIL
        assert _value(after, "pgtasks_tasks_failed_total", queue="default", task="metered.ok") == 0
        assert (
            _value(after, "pgtasks_tasks_retried_total", queue="default", task="metered.flaky")
            == FLAKY * RETRIES
        )
        total = sum(runs.values())
        assert _value(after, "pgtasks_task_runtime_seconds_count", queue="default") == total
        assert _value(after, "pgtasks_task_runtime_seconds_bucket", queue="default", le="+Inf") == total
        assert _value(after, "pgtasks_task_enqueue_to_start_seconds_count", queue="default") == total
        assert _value(after, "pgtasks_task_enqueue_to_start_seconds_sum", queue="default") >= 0
        assert _value(after, "pgtasks_worker_running_tasks") == 0

        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
        assert missing.value.code == 404
    finally:
        client.close()
        stop(proc)
    assert proc.returncode == 0, log.read_text()


def test_metrics_port_refuses_a_bad_port(database_url: str) -> None:
    done = run_pgtasks("worker", "-A", METERED_APP, "--metrics-port", "70000", url=database_url)
    assert done.returncode == 2
    assert "argument --metrics-port: must be between 0 and 65535 (0: any free port), not 70000" in done.stderr


def test_metrics_port_without_prometheus_client_says_what_to_install(
    database_url: str, tmp_path: Path
) -> None:
    # A package that fails to import stands in for prometheus-client not being installed.
    shadow = tmp_path / "prometheus_client"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('No module named prometheus_client')\n")
    env = {"PYTHONPATH": f"{tmp_path}:{REPO}"}
    done = run_pgtasks("worker", "-A", METERED_APP, "--metrics-port", "0", url=database_url, env=env)
    assert done.returncode == 2, done.stderr
    assert "--metrics-port needs prometheus-client: pip install 'pgtasks[dashboard]'" in done.stderr
