"""A task's span is a child of the producer's span across processes: the producer (this
process) sends under a span, a real `pgtasks worker` subprocess runs the tasks and exports its
spans to a file, and the two sides are joined by trace and span ids."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace

from pgtasks import Client
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process
from tests.support.tracing import read_spans, spans_in_memory

APP = "tests.acceptance.apps.traced_app"


def _by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_task_and_step_spans_join_the_producers_trace(pg_url: str, tmp_path: Path, pool: str) -> None:
    spans_file = tmp_path / "spans.jsonl"
    client = Client(pg_url)
    with spans_in_memory() as exporter:
        tracer = trace.get_tracer("web")
        with tracer.start_as_current_span("POST /checkout") as request_span:
            ok = client.enqueue("traced.checkout", [4])
            bad = client.enqueue("traced.explode")
        request_ctx = request_span.get_span_context()
        produced = {s.name: s for s in exporter.get_finished_spans()}

    worker = worker_process(
        pg_url,
        tmp_path / "ledger",
        "w-traced",
        app=APP,
        pool=pool,
        extra_env={"PGTASKS_TEST_SPANS": str(spans_file)},
    )
    try:
        assert ok.get(timeout=60) == "charged 40"
        with pytest.raises(ValueError, match="declined"):
            bad.get(timeout=60)
        wait_for(
            lambda: len(_by_name(read_spans(spans_file), "run traced.explode")) == 1,
            timeout=30,
            what="the failed task's span to be exported",
        )
    finally:
        output = stop(worker, signal.SIGTERM)
    assert worker.returncode == 0, output

    trace_id = f"{request_ctx.trace_id:032x}"
    send_ok = produced["send traced.checkout"]
    send_bad = produced["send traced.explode"]
    assert send_ok.parent is not None and send_ok.parent.span_id == request_ctx.span_id
    assert send_ok.kind is trace.SpanKind.PRODUCER
    assert send_ok.attributes is not None and send_ok.attributes["messaging.message.id"] == ok.id

    spans = read_spans(spans_file)
    [run_ok] = _by_name(spans, "run traced.checkout")
    assert run_ok["trace_id"] == trace_id
    assert run_ok["parent_id"] == f"{send_ok.context.span_id:016x}"
    assert run_ok["kind"] == "CONSUMER"
    assert run_ok["attributes"]["messaging.message.id"] == ok.id
    assert run_ok["attributes"]["messaging.destination.name"] == "default"
    assert run_ok["status"] == "UNSET"
    steps = [s for s in spans if s["name"] in ("step reserve", "step charge")]
    assert sorted(s["name"] for s in steps) == ["step charge", "step reserve"]
    assert all(s["parent_id"] == run_ok["span_id"] and s["trace_id"] == trace_id for s in steps)

    [run_bad] = _by_name(spans, "run traced.explode")
    assert run_bad["parent_id"] == f"{send_bad.context.span_id:016x}"
    assert run_bad["status"] == "ERROR"
    [event] = [e for e in run_bad["events"] if e["name"] == "exception"]
    assert event["attributes"]["exception.type"] == "ValueError"
    assert "declined" in event["attributes"]["exception.message"]


def test_a_task_sent_from_a_task_continues_the_trace(pg_url: str, tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    client = Client(pg_url)
    with spans_in_memory():
        with trace.get_tracer("cli").start_as_current_span("start") as root:
            parent = client.enqueue("traced.fan_out", [2])
        trace_id = f"{root.get_span_context().trace_id:032x}"
    worker = worker_process(
        pg_url, tmp_path / "ledger", "w-fan", app=APP, extra_env={"PGTASKS_TEST_SPANS": str(spans_file)}
    )
    try:
        children = parent.get(timeout=60)
        for child in children:
            client.AsyncResult(child).get(timeout=60)
        wait_for(
            lambda: len(_by_name(read_spans(spans_file), "run traced.checkout")) == 2,
            timeout=30,
            what="both children's spans",
        )
    finally:
        stop(worker)
    spans = read_spans(spans_file)
    [run_parent] = _by_name(spans, "run traced.fan_out")
    sends = _by_name(spans, "send traced.checkout")
    assert len(sends) == 2
    assert all(s["parent_id"] == run_parent["span_id"] for s in sends)
    runs = _by_name(spans, "run traced.checkout")
    assert sorted(r["parent_id"] for r in runs) == sorted(s["span_id"] for s in sends)
    assert {s["trace_id"] for s in spans} == {trace_id}
