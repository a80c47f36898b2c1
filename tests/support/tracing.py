"""OpenTelemetry's SDK for the tracing tests: a provider that keeps finished spans in memory
(in this process) or writes them as JSON lines to a file (in a worker subprocess)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from pgtasks.engine import tracing


def _reset_global_provider() -> None:
    # The API sets its global provider once per process; its own test utilities reset these
    # two private globals the same way, so each test starts without a provider.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@contextmanager
def spans_in_memory() -> Iterator[InMemorySpanExporter]:
    """A global SDK provider for the duration of the block; the exporter holds its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _reset_global_provider()
    trace.set_tracer_provider(provider)
    tracing.reset()
    try:
        yield exporter
    finally:
        provider.shutdown()
        _reset_global_provider()
        tracing.reset()


class JsonLinesExporter(SpanExporter):
    """Appends each finished span to ``path`` as one JSON object per line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a") as sink:
            for span in spans:
                sink.write(json.dumps(span_record(span)) + "\n")
        return SpanExportResult.SUCCESS


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """The parts of a span the tests look at, as plain JSON."""
    context = span.get_span_context()
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{context.trace_id:032x}" if context else None,
        "span_id": f"{context.span_id:016x}" if context else None,
        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
    }


def export_to_file_from_env() -> None:
    """In a worker subprocess: export spans to the file named by PGTASKS_TEST_SPANS."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(os.environ["PGTASKS_TEST_SPANS"])))
    trace.set_tracer_provider(provider)


def read_spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
