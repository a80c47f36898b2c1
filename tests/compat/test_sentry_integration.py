"""sentry-sdk's own CeleryIntegration, set up as its documentation says, reports a failing
task from a pgtasks worker and continues the producer's trace in the worker."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.cli import REPO, cli_env
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

APP = "tests.compat.apps.sentry_app"

PRODUCER = textwrap.dedent(
    """
    import json
    from pgtasks.compat import install
    install()
    import sentry_sdk
    from tests.compat.apps.sentry_app import add, divide

    with sentry_sdk.start_transaction(name="POST /divide", op="http.server") as transaction:
        ok = add.delay(2, 3)
        bad = divide.delay(1, 0)
    print(json.dumps({"trace_id": transaction.trace_id, "ok": ok.id, "bad": bad.id,
                      "sum": ok.get(timeout=60)}))
    sentry_sdk.flush()
    """
)


def _items(path: Path, kind: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line["payload"] for line in lines if line["type"] == kind]


def test_sentry_reports_the_failing_task_and_continues_the_trace(pg_url: str, tmp_path: Path) -> None:
    worker_events = tmp_path / "worker.jsonl"
    worker = worker_process(
        pg_url,
        tmp_path / "ledger",
        "w-sentry",
        app=APP,
        extra_env={"PGTASKS_TEST_SENTRY": str(worker_events)},
    )
    try:
        produced = subprocess.run(
            [sys.executable, "-c", PRODUCER],
            cwd=REPO,
            env=cli_env(pg_url, {"PGTASKS_TEST_SENTRY": str(tmp_path / "producer.jsonl")}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert produced.returncode == 0, produced.stderr
        sent = json.loads(produced.stdout.strip().splitlines()[-1])
        assert sent["sum"] == 5
        wait_for(
            lambda: any(
                e.get("tags", {}).get("celery_task_id") == sent["bad"] for e in _items(worker_events, "event")
            ),
            timeout=60,
            what="the worker's error event for the failing task",
        )
        wait_for(
            lambda: len(_items(worker_events, "transaction")) >= 2,
            timeout=60,
            what="the worker's transactions of both tasks",
        )
    finally:
        output = stop(worker)
    assert worker.returncode == 0, output
    assert f"divide[{sent['bad']}] raised unexpected: ZeroDivisionError" in output

    [event] = [
        e for e in _items(worker_events, "event") if e.get("tags", {}).get("celery_task_id") == sent["bad"]
    ]
    [exception] = event["exception"]["values"]
    assert exception["type"] == "ZeroDivisionError"
    assert exception["mechanism"]["type"] == "celery"
    assert event["extra"]["celery-job"]["task_name"] == "tests.compat.apps.sentry_app.divide"

    transactions = {t["transaction"]: t for t in _items(worker_events, "transaction")}
    run_ok = transactions["tests.compat.apps.sentry_app.add"]
    run_bad = transactions["tests.compat.apps.sentry_app.divide"]
    for run in (run_ok, run_bad):
        assert run["contexts"]["trace"]["trace_id"] == sent["trace_id"]
    assert run_ok["contexts"]["trace"]["status"] == "ok"
    assert run_bad["contexts"]["trace"]["status"] == "internal_error"
    # each run's parent is the producer's span that sent it (its apply_async), one span per task
    [request] = _items(tmp_path / "producer.jsonl", "transaction")
    assert request["transaction"] == "POST /divide"
    sending = {span["span_id"]: span for span in request["spans"]}
    parents = [run["contexts"]["trace"]["parent_span_id"] for run in (run_ok, run_bad)]
    assert len(set(parents)) == 2 and all(parent in sending for parent in parents), (parents, sending)
    assert {sending[p]["description"] for p in parents} == {
        "tests.compat.apps.sentry_app.add",
        "tests.compat.apps.sentry_app.divide",
    }
