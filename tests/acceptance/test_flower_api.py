"""Flower 2.2's REST API, command line, metrics and guards, over HTTP against a real
`pgtasks -A app flower --port=N ...` subprocess (Flower's own command line) and a real worker
(one of each for the module), written from Flower's API reference and from exchanges captured
from a real Flower 2.2 (status codes, content types, error texts, shapes)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pgtasks import App
from tests.acceptance.test_dashboard import _free_port, _http
from tests.support.cli import cli_env, run_pgtasks, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process
from tests.support.schemas import scratch_schema, with_schema

FLOWER_APP = "tests.acceptance.apps.flower_app"
WORKER = "flower-w1"
TEXT = "text/plain; charset=UTF-8"
API_CLOSED = (
    b"FLOWER_UNAUTHENTICATED_API environment variable is required to enable API without authentication"
)


class Flower:
    """`pgtasks -A app flower <options>` running, and its base URL."""

    def __init__(
        self, database_url: str, *options: str, env: dict[str, str] | None = None, prefix: str = ""
    ) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}{prefix}"
        self.log = Path(tempfile.mkstemp(suffix=".log")[1])
        args = ("-A", FLOWER_APP, "flower", f"--port={self.port}", *options)
        self.proc = spawn_pgtasks(*args, env=cli_env(database_url, env), output=self.log)
        wait_for(self._up, 60, f"flower on port {self.port}")

    def _up(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            return _http(self.base + "/healthcheck")[0] == 200
        except OSError:
            return False

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        status, body, got = _http(self.base + path, headers=headers)
        return (
            status,
            (json.loads(body) if got.get("content-type", "").startswith("application/json") else body),
            got,
        )

    def post(
        self, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        raw = b"" if body is None else json.dumps(body).encode()
        status, answer, got = _http(self.base + path, "POST", raw, headers)
        return (
            status,
            (json.loads(answer) if got.get("content-type", "").startswith("application/json") else answer),
            got,
        )


@pytest.fixture(scope="module")
def database_url(pg_server_url: str) -> Iterator[str]:
    with scratch_schema(pg_server_url, prefix="flowerapi_") as schema:
        yield with_schema(pg_server_url, schema)


@pytest.fixture(scope="module")
def app(database_url: str) -> Iterator[App]:
    application = App("flowerapi", database_url=database_url)
    application.engine.admin.migrate()
    yield application
    application.close()


@pytest.fixture(scope="module")
def worker(database_url: str, app: App, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    ledger = tmp_path_factory.mktemp("flowerapi") / "effects.log"
    ledger.touch()
    proc = worker_process(
        database_url, ledger, WORKER, app=FLOWER_APP, extra_args=("-Q", "default"), pool="prefork"
    )
    yield proc
    if proc.poll() is None:
        stop(proc)


@pytest.fixture(scope="module")
def flower(database_url: str, worker: Any) -> Iterator[Flower]:
    running = Flower(
        database_url, "--address=127.0.0.1", "--max_tasks=1000", env={"FLOWER_UNAUTHENTICATED_API": "yes"}
    )
    wait_for(lambda: WORKER in running.get("/api/workers")[1], 60, "the worker in /api/workers")
    yield running
    stop(running.proc)


def test_workers_as_inspect_describes_them(flower: Flower) -> None:
    status, workers, headers = flower.get("/api/workers?refresh=1")
    assert status == 200 and headers["content-type"] == "application/json; charset=UTF-8"
    w = workers[WORKER]
    assert {"stats", "active_queues", "registered", "conf", "timestamp"} <= set(w)
    assert {"total", "pid", "clock", "uptime", "pool", "broker", "prefetch_count", "rusage"} <= set(
        w["stats"]
    )
    assert isinstance(w["stats"]["clock"], str) and w["stats"]["pool"]["max-concurrency"] == 2
    assert [q["name"] for q in w["active_queues"]] == ["default"] and w["active_queues"][0]["exchange"][
        "type"
    ] == "direct"
    assert {"fl.add", "fl.fail", "fl.wait"} <= set(w["registered"])
    assert w["conf"]["broker_url"].startswith("postgresql://") and w["conf"]["timezone"] == "UTC"
    status, one, _ = flower.get(f"/api/workers?workername={WORKER}&refresh=1")
    assert status == 200 and {"active", "scheduled", "reserved", "revoked"} <= set(one[WORKER])
    assert flower.get("/api/workers?status=1")[1] == {WORKER: True}
    assert flower.get("/api/workers?workername=nobody@nowhere")[:2] == (
        404,
        b"Unknown worker 'nobody@nowhere'",
    )
    assert flower.get("/api/workers?refresh=maybe")[:2] == (400, b"Invalid argument 'maybe' of type 'bool'")


def test_sending_waiting_and_reading_tasks(flower: Flower, app: App) -> None:
    status, applied, _ = flower.post("/api/task/apply/fl.add", {"args": [2, 3], "timeout": 30})
    assert status == 200 and list(applied) == ["task-id", "result", "state"] and applied["result"] == 5
    failed = flower.post("/api/task/apply/fl.fail", {"args": ["boom"], "timeout": 30})[1]
    assert (
        failed["state"] == "FAILURE"
        and failed["result"] == "ValueError('boom')"
        and "Traceback" in failed["traceback"]
    )
    eta = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
    status, later, _ = flower.post("/api/task/async-apply/fl.add", {"args": [1, 1], "eta": eta})
    assert status == 200 and later["state"] == "PENDING"
    assert app.AsyncResult(later["task-id"]).status == "DELAYED"
    for bad in ({"eta": "tomorrow"}, {"eta": 12345}, {"expires": "nope"}, {"countdown": "abc"}):
        assert flower.post("/api/task/async-apply/fl.add", {"args": [1, 1], **bad})[:2] == (
            400,
            b"Invalid option",
        )
    assert flower.post("/api/task/async-apply/fl.add", {"args": 5})[:2] == (400, b"args must be an array")
    assert flower.post("/api/task/async-apply/no.such")[:2] == (404, b"Unknown task 'no.such'")
    sent = flower.post("/api/task/send-task/fl.add", {"args": [20, 22]})[1]
    assert app.AsyncResult(sent["task-id"]).get(timeout=30) == 42
    status, info, _ = flower.get(f"/api/task/info/{applied['task-id']}")
    assert status == 200 and info["state"] == "SUCCESS" and info["args"] == "[2, 3]" and info["result"] == "5"
    assert info["worker"] == WORKER and isinstance(info["received"], float) and info["routing_key"] is None
    assert flower.get(f"/api/task/info/{later['task-id']}")[1]["eta"].startswith(eta[:10])
    assert flower.get("/api/task/info/nope")[:2] == (404, b"Unknown task 'nope'")
    assert flower.get(f"/api/task/result/{sent['task-id']}")[1] == {
        "task-id": sent["task-id"],
        "state": "SUCCESS",
        "result": 42,
    }
    assert flower.get("/api/task/result/x?timeout=abc")[:2] == (
        400,
        b"Invalid argument 'abc' of type 'float'",
    )
    assert flower.get("/api/task/types")[1] == {"task-types": ["fl.add", "fl.fail"]}
    revoked = flower.post(f"/api/task/revoke/{later['task-id']}")[1]
    assert (
        revoked == {"message": f"Revoked '{later['task-id']}'"}
        and app.AsyncResult(later["task-id"]).status == "CANCELLED"
    )


def test_task_listing_filters_orders_and_searches(flower: Flower) -> None:
    assert (
        flower.post("/api/task/apply/fl.fail", {"args": ["listed"], "timeout": 30})[1]["state"] == "FAILURE"
    )
    for x in range(3):
        flower.post("/api/task/apply/fl.add", {"args": [x, 100], "timeout": 30})
    everything = flower.get("/api/tasks")[1]
    stamps = [t["timestamp"] for t in everything.values()]
    assert stamps == sorted(stamps, reverse=True)  # the latest event first, as Flower
    assert all(list(t)[-1] == "worker" for t in everything.values())
    names = [t["name"] for t in flower.get("/api/tasks?sort_by=name")[1].values()]
    assert names == sorted(names)
    assert (
        len(flower.get("/api/tasks?limit=2&offset=1")[1]) == 2 and flower.get("/api/tasks?limit=0")[1] == {}
    )
    assert flower.get("/api/tasks?limit=-1")[1] == {}  # as Flower 2.2: a page of max(limit, 0)
    assert {t["state"] for t in flower.get("/api/tasks?state=FAILURE")[1].values()} == {"FAILURE"}
    assert flower.get("/api/tasks?state=NOPE")[1] == {}
    found = flower.get("/api/tasks?search=" + "state:FAILURE%20OR%20args:100")[1]
    assert {t["state"] for t in found.values()} == {"FAILURE", "SUCCESS"} and len(found) >= 4
    assert flower.get("/api/tasks?search=ab")[:2] == (
        400,
        {"error": "Substring search terms must contain at least 3 characters at position 0."},
    )
    assert flower.get("/api/tasks?sort_by=runtime")[:2] == (
        400,
        b"Invalid sort_by 'runtime', expected one of name, received, started, state",
    )
    assert flower.get("/api/tasks?received_start=yesterday")[0] == 400
    assert flower.get(f"/api/tasks?workername={WORKER.upper()}&taskname=FL.FAIL")[
        1
    ].keys() == found.keys() - {k for k, t in found.items() if t["name"] != "fl.fail"}


def test_worker_controls_travel_through_the_database(flower: Flower, database_url: str) -> None:
    status, added, _ = flower.post(f"/api/worker/queue/add-consumer/{WORKER}?queue=extra")
    assert (status, added) == (200, {"message": "add consumer extra"})
    queues = [q["name"] for q in flower.get("/api/workers?refresh=1")[1][WORKER]["active_queues"]]
    assert queues == ["default", "extra"]
    assert [q["name"] for q in flower.get("/api/queues/length")[1]["active_queues"]] == ["default", "extra"]
    ran = flower.post("/api/task/apply/fl.add", {"args": [1, 2], "queue": "extra", "timeout": 30})[1]
    assert ran["state"] == "SUCCESS"  # the worker consumes the queue it was given
    assert flower.post(f"/api/worker/queue/cancel-consumer/{WORKER}?queue=extra")[1] == {
        "message": "no longer consuming from extra"
    }
    status, body, _ = flower.post(f"/api/worker/pool/autoscale/{WORKER}?min=1&max=2")
    assert (status, body) == (
        403,
        f"Failed to autoscale '{WORKER}' worker: ValueError('Autoscale not enabled')".encode(),
    )
    assert flower.post(f"/api/worker/pool/autoscale/{WORKER}?max=2")[:2] == (400, b"Missing argument min")
    assert flower.post(f"/api/worker/pool/grow/{WORKER}?n=abc")[:2] == (
        400,
        b"Invalid argument 'abc' of type 'int'",
    )
    grown = flower.post(f"/api/worker/pool/grow/{WORKER}")
    assert grown[:2] == (200, {"message": f"Growing '{WORKER}' worker's pool by 1"})

    def pool() -> dict[str, Any]:
        return dict(flower.get("/api/workers?refresh=1")[1][WORKER]["stats"]["pool"])

    wait_for(lambda: len(pool()["processes"]) == 3, 60, "a third process")
    assert pool()["max-concurrency"] == 3
    shrunk = flower.post(f"/api/worker/pool/shrink/{WORKER}?n=2")
    assert shrunk[:2] == (200, {"message": f"Shrinking '{WORKER}' worker's pool by 2"})
    wait_for(lambda: len(pool()["processes"]) == 1, 60, "the pool down to one process")
    refused = flower.post(f"/api/worker/pool/shrink/{WORKER}?n=5")
    why = 'ValueError("Can\'t shrink pool below one process")'
    assert refused[:2] == (403, f"Failed to shrink '{WORKER}' worker's pool: {why}".encode())
    assert flower.post(f"/api/worker/pool/grow/{WORKER}")[0] == 200
    assert flower.post("/api/task/apply/fl.add", {"args": [2, 2], "timeout": 30})[1]["result"] == 4
    assert flower.post("/api/worker/shutdown/nobody@nowhere")[:2] == (404, b"Unknown worker 'nobody@nowhere'")


def test_http_conventions_etags_cors_and_methods(flower: Flower) -> None:
    status, body, headers = flower.get("/api/task/types")
    assert headers["x-content-type-options"] == "nosniff" and headers["access-control-allow-origin"] == "*"
    tag = headers["etag"]
    status, body, again = flower.get("/api/task/types", {"If-None-Match": tag})
    assert status == 304 and body == b"" and again["etag"] == tag
    assert flower.get("/api/task/types", {"If-None-Match": '"stale"'})[0] == 200
    status, body, _ = _http(flower.base + "/api/workers", "OPTIONS")
    assert (status, body) == (204, b"")
    assert _http(flower.base + "/api/tasks", "PUT", b"")[0] == 405
    assert _http(flower.base + "/metrics", "POST", b"")[:2] == (405, b"None")
    assert flower.get("/no/such/page")[0] == 404 and flower.get("/healthcheck")[1] == b"OK"


def test_flower_metric_families(flower: Flower) -> None:
    assert flower.post("/api/task/apply/fl.add", {"args": [1, 2], "timeout": 30})[1]["state"] == "SUCCESS"
    assert (
        flower.post("/api/task/apply/fl.fail", {"args": ["counted"], "timeout": 30})[1]["state"] == "FAILURE"
    )
    status, body, headers = flower.get("/metrics")
    assert status == 200 and headers["content-type"] == "text/plain"
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert {
        "flower_events", "flower_task_runtime_seconds", "flower_task_prefetch_time_seconds",
        "flower_worker_prefetched_tasks", "flower_worker_online", "process_cpu_seconds", "python_info",
        "flower_worker_number_of_currently_executing_tasks",
    } <= set(families)  # fmt: skip
    events = {
        (s.labels["task"], s.labels["type"], s.labels["worker"]) for s in families["flower_events"].samples
    }
    assert {("fl.add", "task-succeeded", WORKER), ("fl.fail", "task-failed", WORKER)} <= events
    online = {s.labels["worker"]: s.value for s in families["flower_worker_online"].samples}
    assert online == {WORKER: 1.0}


def test_dns_rebinding_and_cross_site_requests_are_refused(flower: Flower, app: App) -> None:
    target = app.enqueue("fl.add", [1, 1], queue="nobody-consumes").id
    rebound = flower.get("/api/tasks", {"Host": f"attacker.example:{flower.port}"})
    assert rebound[0] == 403 and b"--allowed-hosts" in rebound[1]
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://attacker.example"}):
        assert flower.post(f"/api/task/revoke/{target}", headers=headers)[0] == 403
    assert app.AsyncResult(target).status == "ENQUEUED"
    same = {"Sec-Fetch-Site": "same-origin", "Origin": f"http://127.0.0.1:{flower.port}"}
    assert flower.post(f"/api/task/revoke/{target}", headers=same)[0] == 200


def test_closed_api_basic_auth_prefix_and_flowerconfig(
    database_url: str, worker: Any, tmp_path: Path
) -> None:
    closed = Flower(database_url, "--address=127.0.0.1")
    try:
        assert closed.get("/api/workers")[:2] == (401, API_CLOSED)
        assert closed.get("/metrics")[0] == 200 and closed.get("/")[0] == 200
    finally:
        stop(closed.proc)
    config = tmp_path / "flowerconfig.py"
    config.write_text("basic_auth = ['ops:s3cret']\nurl_prefix = 'flower'\n")
    guarded = Flower(database_url, "--address=127.0.0.1", f"--conf={config}", "--persistent=True",
                     env={"FLOWER_MAX_TASKS": "50"}, prefix="/flower")  # fmt: skip
    try:
        status, body, headers = guarded.get("/api/workers")
        assert (status, body) == (401, b"") and "www-authenticate" not in headers
        page = guarded.get("/")
        assert page[0] == 401 and page[2]["www-authenticate"] == 'Basic realm="flower"'
        good = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}
        assert WORKER in guarded.get("/api/workers", good)[1]
        assert "access-control-allow-origin" not in guarded.get("/api/workers", good)[2]
        assert (
            _http(f"http://127.0.0.1:{guarded.port}/api/workers", headers=good)[0] == 404
        )  # outside the prefix
        assert "persistent accepted and ignored" in guarded.log.read_text()
    finally:
        stop(guarded.proc)


def test_a_revoke_before_the_task_is_sent_is_remembered(flower: Flower) -> None:
    """As Celery's workers remember revoked ids: the task sent later under the id never runs."""
    task_id = f"revoked-ahead-{uuid.uuid4()}"
    assert flower.post(f"/api/task/revoke/{task_id}")[:2] == (200, {"message": f"Revoked '{task_id}'"})
    applied = flower.post("/api/task/apply/fl.add", {"args": [1, 2], "task_id": task_id, "timeout": 30})
    assert applied[:2] == (
        200,
        {"task-id": task_id, "result": "TaskRevokedError('revoked')", "state": "REVOKED"},
    )
    assert flower.get(f"/api/task/info/{task_id}")[1]["state"] == "REVOKED"


def test_send_task_and_async_apply_take_iso_8601_dates(flower: Flower, app: App) -> None:
    body = {"args": [1, 1], "eta": "2090-01-01T00:00:00+00:00", "expires": "2091-01-01T02:00:00+02:00"}
    status, sent, _ = flower.post("/api/task/send-task/fl.add", body)
    assert status == 200 and sent["state"] == "PENDING"
    naive = flower.post("/api/task/async-apply/fl.add", {"args": [1, 1], "eta": "2090-01-01T00:00:00"})[1]
    zulu = flower.post("/api/task/async-apply/fl.add", {"args": [1, 1], "eta": "2090-01-01T00:00:00Z"})[1]
    ids = [sent["task-id"], naive["task-id"], zulu["task-id"]]
    for task_id in ids:
        assert app.AsyncResult(task_id).status == "DELAYED"
        assert flower.get(f"/api/task/info/{task_id}")[1]["eta"] == "2090-01-01T00:00:00+00:00"
    assert flower.get(f"/api/task/info/{ids[0]}")[1]["expires"] == "2091-01-01T00:00:00+00:00"
    for bad in ({"eta": "garbage"}, {"expires": "2090-13-01T00:00:00"}, {"eta": ["2090-01-01"]}):
        assert flower.post("/api/task/send-task/fl.add", {"args": [1, 1], **bad})[:2] == (
            400,
            b"Invalid option",
        )
    for task_id in ids:
        assert flower.post(f"/api/task/revoke/{task_id}")[0] == 200


def test_arguments_the_task_cannot_take_are_refused_before_sending(flower: Flower, app: App) -> None:
    before = len(app.list_tasks(name="fl.add", limit=1000))
    refusals = [
        ("async-apply", {"args": [1, 2, 3]}, b"add() too many positional arguments"),
        ("apply", {"args": [1], "timeout": 30}, b"add() missing a required argument: 'y'"),
        ("async-apply", {"args": [1, 2], "kwargs": {"z": 2}}, b"add() got an unexpected keyword argument"),
    ]
    for endpoint, body, message in refusals:
        status, answer, _ = flower.post(f"/api/task/{endpoint}/fl.add", body)
        assert status == 400 and answer.startswith(message), answer
    assert len(app.list_tasks(name="fl.add", limit=1000)) == before  # nothing was sent
    applied = flower.post("/api/task/apply/fl.add", {"args": [1], "kwargs": {"y": 2}, "timeout": 30})[1]
    assert applied["state"] == "SUCCESS" and applied["result"] == 3
    assert flower.post("/api/task/send-task/fl.add", {"args": [1, 2, 3]})[0] == 200  # by name: unchecked


def test_tasks_with_an_eta_are_not_counted_as_prefetched(flower: Flower, app: App) -> None:
    status, later, _ = flower.post("/api/task/async-apply/fl.add", {"args": [5, 5], "countdown": 3600})
    assert status == 200 and app.AsyncResult(later["task-id"]).status == "DELAYED"
    listed = flower.get("/api/tasks?taskname=fl.add&state=RECEIVED")[1]
    assert listed[later["task-id"]]["worker"] == WORKER  # held by the worker, as Celery's would be
    families = {f.name: f for f in text_string_to_metric_families(flower.get("/metrics")[1].decode())}
    samples = families["flower_worker_prefetched_tasks"].samples
    prefetched = {(s.labels["task"], s.labels["worker"]): s.value for s in samples}
    assert prefetched[("fl.add", WORKER)] == 0.0
    assert flower.post(f"/api/task/revoke/{later['task-id']}")[0] == 200


def test_an_empty_task_id_matches_no_route(flower: Flower) -> None:
    """Flower's routes end in ``(.+)``: an empty id is Flower's 404 page, not a PENDING task."""
    for method, path in (
        ("GET", "/api/task/result/"),
        ("POST", "/api/task/revoke/"),
        ("POST", "/api/task/abort/"),
        ("POST", "/api/task/async-apply/"),
        ("POST", "/api/worker/shutdown/"),
    ):
        status, body, headers = _http(flower.base + path, method, b"" if method == "POST" else None)
        assert (status, headers["content-type"]) == (404, "text/html; charset=UTF-8") and b"Not Found" in body
    assert flower.get("/api/task/info/")[:2] == (404, b"Unknown task ''")  # (.*) in Flower


def test_values_no_task_can_have_are_a_400_naming_them_not_a_500(flower: Flower, app: App) -> None:
    """Each of these was a 500 without a body (a NUL in an id, kwargs that are no object, a
    page past a database integer)."""
    nul = b"task id 'a\\x00b' contains a NUL character"
    for method, path in (
        ("GET", "/api/task/info/a%00b"),
        ("GET", "/api/task/result/a%00b"),
        ("POST", "/api/task/revoke/a%00b"),
        ("POST", "/api/task/abort/a%00b"),
    ):
        status, body, headers = _http(flower.base + path, method, b"" if method == "POST" else None)
        assert (status, body, headers["content-type"]) == (400, nul, TEXT), (path, status, body)
    assert flower.get("/task/a%00b")[:2] == (404, b"no such task")  # the dashboard's page
    before = len(app.list_tasks(name="fl.add", limit=1000))
    status, answer, _ = flower.post("/api/task/async-apply/fl.add", {"args": [1], "kwargs": [2]})
    assert (status, answer) == (400, b"kwargs must be an object")
    assert len(app.list_tasks(name="fl.add", limit=1000)) == before
    assert flower.get("/api/tasks?taskname=a%00b")[:2] == (
        400,
        b"name filter 'a\\x00b' contains a NUL character",
    )
    huge = 10**22
    assert flower.get(f"/api/tasks?taskname=fl.nothing&limit={huge}")[:2] == (200, {})
    assert flower.get(f"/api/tasks?offset={huge}")[:2] == (200, {})
    assert " failed" not in flower.log.read_text()  # no handler raised


def test_the_task_listing_shows_children(flower: Flower) -> None:
    parent = flower.post("/api/task/apply/fl.spawn", {"args": [4], "timeout": 30})[1]
    assert parent["state"] == "SUCCESS"
    child = parent["result"]
    listed = flower.get("/api/tasks?taskname=fl.spawn")[1]
    assert listed[parent["task-id"]]["children"] == [child]
    assert flower.get(f"/api/task/info/{parent['task-id']}")[1]["children"] == [child]
    assert flower.get("/api/tasks?taskname=fl.add&limit=5")[1][child]["children"] == []


def test_no_tasks_kept_lists_the_running_ones_and_buckets_end_with_one_inf(
    database_url: str, flower: Flower, app: App
) -> None:
    """``--max_tasks=0``: Flower keeps no task; the listing shows only the running ones.
    ``--task_runtime_metric_buckets=...,inf``: the +Inf bucket once."""
    assert flower.post("/api/task/apply/fl.add", {"args": [1, 1], "timeout": 30})[1]["state"] == "SUCCESS"
    running = app.enqueue("fl.wait", [60]).id
    wait_for(lambda: app.AsyncResult(running).status == "PENDING", 60, "fl.wait running")
    bare = Flower(
        database_url, "--address=127.0.0.1", "--max_tasks=0", "--task_runtime_metric_buckets=1,2.5,inf",
        env={"FLOWER_UNAUTHENTICATED_API": "yes"},
    )  # fmt: skip
    try:
        assert list(bare.get("/api/tasks")[1]) == [running]
        assert list(bare.get("/api/tasks?state=STARTED")[1]) == [running]
        assert bare.get("/api/tasks?state=SUCCESS")[1] == {}
        assert bare.get("/api/task/types")[1] == {"task-types": ["fl.wait"]}
        families = {f.name: f for f in text_string_to_metric_families(bare.get("/metrics")[1].decode())}
        bounds = [
            s.labels["le"]
            for s in families["flower_task_runtime_seconds"].samples
            if s.name.endswith("_bucket") and s.labels["task"] == "fl.add"
        ]
        assert bounds == ["1.0", "2.5", "+Inf"]
    finally:
        stop(bare.proc)
        flower.post(f"/api/task/revoke/{running}?terminate=true&signal=SIGKILL")
    wait_for(lambda: app.AsyncResult(running).status == "CANCELLED", 60, "fl.wait revoked")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--inspect_timeout=abc", "--inspect_timeout: could not convert string to float: 'abc'"),
        ("--purge_offline_workers=abc", "--purge_offline_workers: invalid literal for int()"),
        ("--certfile=/etc/ssl/flower.pem", "Both 'certfile' and 'keyfile' are required"),
        ("--task_runtime_metric_buckets=5,1", "bucket bounds must increase, but 1 follows 5"),
        ("--task_runtime_metric_buckets=1,abc", "could not convert string to float: 'abc'"),
        ("--max_tasks=-1", "--max-tasks must be 0 (only running tasks) or more, not -1"),
    ],
)
def test_values_flower_refuses_stop_the_start(database_url: str, option: str, message: str) -> None:
    port = f"--port={_free_port()}"
    refused = run_pgtasks("-A", FLOWER_APP, "flower", port, option, url=database_url, timeout=60)
    assert refused.returncode == 2 and message in refused.stderr, refused.stderr


def test_shutdown_stops_the_worker(flower: Flower, worker: Any) -> None:
    assert flower.post(f"/api/worker/shutdown/{WORKER}")[:2] == (200, {"message": "Shutting down!"})
    worker.wait(timeout=60)
    wait_for(
        lambda: flower.get("/api/workers?status=1")[1] == {WORKER: False}, what="the worker listed offline"
    )
