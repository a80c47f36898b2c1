"""The tracing hooks in one process: what is stamped on a task, when nothing is, and that
pgtasks never needs opentelemetry."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from pgtasks import App, Client
from pgtasks.compat import Celery
from pgtasks.compat.celery.canvas.chain import chain
from pgtasks.engine import tracing
from tests.support.cli import REPO
from tests.support.inprocess import running_worker
from tests.support.requests import enqueue_request
from tests.support.tracing import spans_in_memory


@pytest.fixture
def new_client(database_url: str) -> Iterator[Callable[[], Client]]:
    """Clients of the test's database, closed after the test: a pool left to the garbage
    collector may be collected on one of its own threads, which cannot join itself."""
    made: list[Client] = []

    def make() -> Client:
        made.append(Client(database_url))
        return made[-1]

    yield make
    for client in made:
        client.close()


def _meta(client: Client, task_id: str) -> dict[str, object] | None:
    record = client.engine.get_task(task_id)
    assert record is not None
    return None if record.meta is None else json.loads(record.meta)


def _traceparent(span: ReadableSpan) -> str:
    """W3C trace context of ``span``, as the default propagator writes it."""
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def test_nothing_is_stamped_without_a_provider(new_client: Callable[[], Client]) -> None:
    client = new_client()
    sent = client.enqueue("anything", [1])
    assert _meta(client, sent.id) is None


def test_a_bulk_send_is_one_span_and_stamps_every_task(new_client: Callable[[], Client]) -> None:
    client = new_client()
    with spans_in_memory() as exporter:
        ids = client.engine.enqueue([enqueue_request(f"job.{i % 2}") for i in range(5)])
        [span] = exporter.get_finished_spans()
    assert span.name == "send"  # two task names in one call
    assert span.attributes is not None and span.attributes["messaging.batch.message_count"] == 5
    expected = _traceparent(span)
    for task_id in ids:
        meta = _meta(client, task_id)
        assert meta == {"trace": {"traceparent": expected}}


def test_tracing_off_stamps_nothing_even_with_a_provider(
    new_client: Callable[[], Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGTASKS_TRACING", "off")
    client = new_client()
    with spans_in_memory() as exporter:
        sent = client.enqueue("anything")
        assert exporter.get_finished_spans() == ()
    assert _meta(client, sent.id) is None


def test_a_canvas_keeps_its_celery_meta_beside_the_trace(
    database_url: str, new_client: Callable[[], Client]
) -> None:
    app = Celery("traced-canvas", broker=database_url)

    @app.task(name="t.add")
    def add(x: int, y: int) -> int:
        return x + y

    with spans_in_memory() as exporter:
        result = chain(add.s(1, 2), add.s(3)).apply_async()
        [span] = exporter.get_finished_spans()
    client = new_client()
    first = _meta(client, result.parent.id)
    second = _meta(client, result.id)
    traceparent = _traceparent(span)
    for meta in (first, second):
        assert meta is not None
        assert meta["trace"] == {"traceparent": traceparent}
        assert meta["root_id"] == result.parent.id


def test_in_one_process_retries_and_failures_are_on_the_task_span(sqlite_url: str) -> None:
    app = App("traced-inprocess", database_url=sqlite_url)
    attempts: list[int] = []

    @app.step(name="flaky")
    def flaky() -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first call fails")
        return len(attempts)

    @app.task(name="t.uses_step")
    def uses_step() -> int:
        try:
            return flaky()
        except RuntimeError:
            return flaky()

    @app.task(name="t.fails")
    def fails() -> None:
        raise KeyError("missing")

    with spans_in_memory() as exporter, running_worker(app):
        assert uses_step.delay().get(timeout=30) == 2
        with pytest.raises(KeyError):
            fails.delay().get(timeout=30)
        spans = {s.name: s for s in exporter.get_finished_spans()}
        run = spans["run t.uses_step"]
        steps = [s for s in exporter.get_finished_spans() if s.name == "step flaky"]
    assert [s.status.status_code for s in steps] == [trace.StatusCode.ERROR, trace.StatusCode.UNSET]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in steps)
    assert run.status.status_code is trace.StatusCode.UNSET
    failed = spans["run t.fails"]
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert failed.parent is not None and failed.parent.span_id == spans["send t.fails"].context.span_id


def test_pgtasks_runs_without_opentelemetry_and_never_imports_it(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        from pgtasks import App
        from tests.support.inprocess import running_worker
        app = App("plain", database_url="sqlite:///{tmp_path}/db.sqlite3")

        @app.task(name="plain.add")
        def add(x, y):
            return x + y

        with running_worker(app):
            assert add.delay(2, 3).get(timeout=30) == 5
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    tracing.reset()


def test_a_started_worker_has_imported_the_api_before_its_first_task(tmp_path: Path) -> None:
    """The import (20-45 ms) happens as the worker starts, not in the first task it runs;
    whether a provider is set is left to the tasks (nothing is decided at the start)."""
    script = textwrap.dedent(
        f"""
        import sys
        from pgtasks import App
        from pgtasks.engine import tracing
        from tests.support.inprocess import running_worker
        app = App("plain", database_url="sqlite:///{tmp_path}/db.sqlite3")
        assert "opentelemetry.trace" not in sys.modules
        with running_worker(app):
            assert "opentelemetry.trace" in sys.modules
            assert tracing._found is None
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_project_that_calls_celery_instrumentor_still_starts_and_is_traced(tmp_path: Path) -> None:
    """opentelemetry-instrumentation-celery imports Celery's and billiard's names; without the
    celery distribution it instruments nothing (it says so) and pgtasks' own spans remain."""
    script = textwrap.dedent(
        f"""
        from pgtasks.compat import install
        install()
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
        CeleryInstrumentor().instrument()
        from celery import Celery
        from tests.support.tracing import spans_in_memory
        app = Celery("instrumented", broker="sqlite:///{tmp_path}/db.sqlite3")

        @app.task(name="i.add")
        def add(x, y):
            return x + y

        with spans_in_memory() as exporter:
            add.delay(1, 2)
            print(sorted(s.name for s in exporter.get_finished_spans()))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['send i.add']"
