"""The FastAPI example (examples/fastapi_app, issue 15), run for real: uvicorn serving it and an
asyncio worker running its tasks, both subprocesses. A report is enqueued in the request's
transaction (a request that fails after the enqueue leaves no task) and its progress arrives
as server-sent events, one per value of its progress stream (read_stream), then the result."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from pgtasks import Client
from pgtasks.sysdb.urls import parse_database_url
from tests.support.cli import REPO, cli_env
from tests.support.inprocess import wait_for
from tests.support.pgserver import free_port
from tests.support.processes import stop, worker_process


def _post(base: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        f"{base}/reports", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _events(base: str, task_id: str) -> list[tuple[str, object]]:
    events = []
    with urllib.request.urlopen(f"{base}/reports/{task_id}/events", timeout=60) as stream:
        kind = ""
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: "):
                events.append((kind, json.loads(line[len("data: ") :])))
    return events


def _up(base: str) -> bool:
    try:
        urllib.request.urlopen(f"{base}/openapi.json", timeout=2).close()
    except OSError:
        return False
    return True


def test_enqueue_in_the_request_transaction_and_stream_progress(
    pg_url: str, ledger: Path, tmp_path: Path
) -> None:
    extra = {"DATABASE_URL": parse_database_url(pg_url).dsn, "EXAMPLE_STEP_SECONDS": "0.2"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "web.log"
    with log.open("w") as sink:
        web = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "examples.fastapi_app.web:app", "--port", str(port)],
            cwd=REPO,
            env=cli_env(pg_url, extra),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    worker = worker_process(
        pg_url, ledger, "w-reports", app="examples.fastapi_app.tasks", pool="asyncio", extra_env=extra
    )
    client = Client(pg_url)
    try:
        wait_for(lambda: _up(base) or web.poll() is not None, timeout=60, what="uvicorn to serve")
        assert web.poll() is None, log.read_text()
        status, body = _post(base, {"url": "https://example.com/a"})
        assert status == 201, body
        events = _events(base, str(body["task_id"]))
        assert events == [
            ("step", {"position": 1, "name": "fetch"}),
            ("step", {"position": 2, "name": "summarize"}),
            ("step", {"position": 3, "name": "store"}),
            ("done", {"result": "2100 bytes"}),
        ]
        status, failed = _post(base, {"url": "https://example.com/b", "fail_after_enqueue": True})
        assert status == 500 and "rolled back" in str(failed["detail"])
        assert [t.name for t in client.list_tasks()] == ["reports.build"]  # only the first one
    finally:
        client.close()
        stop(worker)
        web.terminate()
        web.wait(30)
