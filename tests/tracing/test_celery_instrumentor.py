"""opentelemetry-instrumentation-celery's own spans across processes: a producer and a real
worker process, each instrumented by ``CeleryInstrumentor``; the worker's ``run/<task>`` span
descends from the producer's ``apply_async/<task>`` span (through pgtasks' own send and run
spans), and a failing task's span says so."""

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
from tests.support.tracing import read_spans

APP = "tests.compat.apps.otel_celery_app"

PRODUCER = textwrap.dedent(
    """
    import json
    from pgtasks.compat import install
    install()
    from opentelemetry import trace
    from tests.compat.apps.otel_celery_app import add, divide

    with trace.get_tracer("web").start_as_current_span("POST /divide") as request:
        ok = add.delay(2, 3)
        bad = divide.delay(1, 0)
    print(json.dumps({"trace_id": f"{request.get_span_context().trace_id:032x}", "ok": ok.id,
                      "bad": bad.id, "sum": ok.get(timeout=60)}))
    """
)


def _named(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [span] = [s for s in spans if s["name"] == name]
    return span


def test_the_instrumentors_spans_join_across_processes_and_report_the_failure(
    pg_url: str, tmp_path: Path
) -> None:
    worker_spans, producer_spans = tmp_path / "worker.jsonl", tmp_path / "producer.jsonl"
    worker = worker_process(
        pg_url, tmp_path / "ledger", "w-otel", app=APP, extra_env={"PGTASKS_TEST_SPANS": str(worker_spans)}
    )
    try:
        produced = subprocess.run(
            [sys.executable, "-c", PRODUCER],
            cwd=REPO,
            env=cli_env(pg_url, {"PGTASKS_TEST_SPANS": str(producer_spans)}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert produced.returncode == 0, produced.stderr
        sent = json.loads(produced.stdout.strip().splitlines()[-1])
        assert sent["sum"] == 5
        divide = "tests.compat.apps.otel_celery_app.divide"
        wait_for(
            lambda: any(s["name"] == f"run/{divide}" for s in read_spans(worker_spans)),
            timeout=60,
            what="the failing task's span",
        )
    finally:
        output = stop(worker)
    assert worker.returncode == 0, output

    producer, spans = read_spans(producer_spans), read_spans(worker_spans)
    for task, task_id in (("add", sent["ok"]), ("divide", sent["bad"])):
        name = f"tests.compat.apps.otel_celery_app.{task}"
        publish, run = _named(producer, f"apply_async/{name}"), _named(spans, f"run/{name}")
        assert publish["kind"] == "PRODUCER" and run["kind"] == "CONSUMER"
        assert publish["trace_id"] == run["trace_id"] == sent["trace_id"]
        assert publish["parent_id"] == _named(producer, "POST /divide")["span_id"]
        # the parent links, across processes: pgtasks' own send and run spans sit between
        # the instrumentor's two, in one chain
        send, pgtasks_run = _named(producer, f"send {name}"), _named(spans, f"run {name}")
        assert send["parent_id"] == publish["span_id"]
        assert pgtasks_run["parent_id"] == send["span_id"]
        assert run["parent_id"] == pgtasks_run["span_id"]
        assert run["attributes"]["celery.task_name"] == name
        assert publish["attributes"]["messaging.message.id"] == task_id
    assert _named(spans, "run/tests.compat.apps.otel_celery_app.add")["status"] == "UNSET"
    failed = _named(spans, "run/tests.compat.apps.otel_celery_app.divide")
    assert failed["status"] == "ERROR"
    [event] = [e for e in failed["events"] if e["name"] == "exception"]
    assert event["attributes"]["exception.type"] == "ZeroDivisionError"
