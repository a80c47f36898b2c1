"""The dashboard as a real `pgtasks dashboard` subprocess, driven by a real browser (Debian's
chromium and chromium-driver through selenium; one browser session for the module), with a
real worker and tasks in PostgreSQL. Flower's REST API and /metrics are checked over HTTP.

With ``PGTASKS_SCREENSHOTS=<folder>`` the page tests save a screenshot of each page there
(docs/dashboard.md shows them)."""

from __future__ import annotations

import base64
import json
import os
import socket
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from prometheus_client.parser import text_string_to_metric_families
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from pgtasks import App
from pgtasks.dashboard.formatting import millis
from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    ClaimParams,
    LinkKind,
    NewTask,
    RecoverOwnParams,
    TaskLink,
)
from tests.support.browser import chromium
from tests.support.cli import cli_env, run_pgtasks, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process
from tests.support.schemas import scratch_schema, with_schema

BOARD_APP = "tests.acceptance.apps.board_app"
SCREENSHOTS = os.environ.get("PGTASKS_SCREENSHOTS")
# Flower's task fields (flower/api/tasks.py, the documented response of GET /api/tasks).
FLOWER_TASK_FIELDS = {
    "args", "client", "clock", "eta", "exception", "exchange", "expires", "failed", "kwargs", "name",
    "received", "result", "retried", "retries", "revoked", "routing_key", "runtime", "sent", "started",
    "state", "succeeded", "timestamp", "traceback", "uuid", "worker", "rejected", "root", "root_id",
    "parent", "parent_id", "children",
}  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(
    url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), {k.lower(): v for k, v in exc.headers.items()}


class Board:
    """A running dashboard subprocess and its base URL."""

    def __init__(self, database_url: str, *extra: str) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(suffix=".log")[1])
        args = ("-A", BOARD_APP, "dashboard", "--port", str(self.port), *extra)
        env = cli_env(database_url, {"FLOWER_UNAUTHENTICATED_API": "true"})
        self.proc = spawn_pgtasks(*args, env=env, output=self.log)
        wait_for(self._up, what=f"the dashboard on port {self.port}")

    def _up(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            return _http(self.base + "/live")[0] in (200, 401)
        except OSError:
            return False

    def stop(self) -> None:
        stop(self.proc)


@pytest.fixture(scope="module")
def database_url(pg_server_url: str) -> Iterator[str]:
    with scratch_schema(pg_server_url, prefix="board_") as schema:
        yield with_schema(pg_server_url, schema)


@pytest.fixture(scope="module")
def seeded(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Finished tasks (a success with steps, a failure with a traceback), a dead letter,
    a schedule, tasks waiting on an unconsumed queue, and a live worker."""
    app = App("board", database_url=database_url)  # sends by name: no task code needed here
    app.engine.admin.migrate()
    ledger = tmp_path_factory.mktemp("board") / "effects.log"
    ledger.touch()
    worker = worker_process(database_url, ledger, "board-worker", app=BOARD_APP, extra_args=("-Q", "default"))
    try:
        ok = app.enqueue("board.work", [21], {"token": "hunter2-secret"})
        failed = app.enqueue("board.fail", ["it broke"])
        assert ok.get(timeout=60) == "value 42"
        app.send(ok.id, {"note": "after the end"}, topic="notes")  # kept, never received
        wait_for(lambda: failed.status == "ERROR", what="the failing task to fail")
        held = [app.enqueue("board.work", [i], queue="held").id for i in range(3)]
        dead = app.enqueue("board.work", [7], queue="graveyard", max_recovery_attempts=0).id
        db = open_system_database(database_url)
        assert [t.task_id for t in db.tasks_claim(ClaimParams("ghost", "v0", ("graveyard",), 1))] == [dead]
        db.tasks_recover_own(RecoverOwnParams("ghost"))  # one attempt over a limit of 0: dead
        # A canvas nobody runs (queue "canvas"): group (cv-h1, cv-h2) | chord body cv-body,
        # then a chain to cv-tail, whose name is a script.
        canvas = [
            NewTask(i, n, '{"args":[],"kwargs":{}}', "canvas")
            for i, n in [
                ("cv-h1", "board.work"),
                ("cv-h2", "board.work"),
                ("cv-body", "board.work"),
                ("cv-tail", "<script>window.__xss=4</script>"),
            ]
        ]
        db.tasks_enqueue_canvas(
            CanvasEnqueue(
                tuple(canvas),
                waiting=frozenset({"cv-body", "cv-tail"}),
                links=(
                    TaskLink("cv-grp", "cv-h1", LinkKind.GROUP, position=0),
                    TaskLink("cv-grp", "cv-h2", LinkKind.GROUP, position=1),
                    TaskLink("cv-h1", "cv-body", LinkKind.CHORD, position=0),
                    TaskLink("cv-h2", "cv-body", LinkKind.CHORD, position=1),
                    TaskLink("cv-body", "cv-tail", LinkKind.CHAIN),
                ),
            )
        )
        db.close()
        app.schedule("nightly", "board.work", "0 3 * * *", timezone="Europe/Paris", args=(1,))
        evil = app.enqueue("<script>window.__xss=1</script>", ["<img src=x onerror='window.__xss=2'>"]).id
        yield {
            "app": app,
            "ok": ok.id,
            "failed": failed.id,
            "held": held,
            "dead": dead,
            "evil": evil,
        }
    finally:
        stop(worker)
        app.close()


@pytest.fixture(scope="module")
def board(database_url: str, seeded: dict[str, Any]) -> Iterator[Board]:
    running = Board(database_url)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def guarded(database_url: str, seeded: dict[str, Any]) -> Iterator[Board]:
    running = Board(database_url, "--basic-auth", "admin:s3cret", "--read-only")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def _shot(browser: WebDriver, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        height = browser.execute_script("return document.body.scrollHeight")
        browser.set_window_size(1400, min(max(600, int(height) + 40), 2400))
        browser.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))
        browser.set_window_size(1400, 1000)


def _text(browser: WebDriver, css: str) -> str:
    """The text of ``css``, read again when a live update replaced the element meanwhile."""
    read: list[str] = []

    def once() -> bool:
        try:
            read.append(str(browser.find_element(By.CSS_SELECTOR, css).text))
        except StaleElementReferenceException:
            return False
        return True

    wait_for(once, timeout=10, what=f"the text of {css}")
    return read[-1]


def _click(browser: WebDriver, form_css: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f"{form_css} button[type=submit]").click()


def _press(browser: WebDriver, url: str, css: str) -> None:
    """Open ``url`` and click the button ``css`` there. The form an earlier click submitted
    may still be loading its answer (a redirect) and replace the page ``get`` opened, so the
    page is opened again until the button is found."""

    def pressed() -> bool:
        browser.get(url)
        found = browser.find_elements(By.CSS_SELECTOR, css)
        if found:
            found[0].click()
        return bool(found)

    wait_for(pressed, what=f"{css} on {url}")


# -- pages ---------------------------------------------------------------------------------
def test_every_page_loads_with_real_tasks(board: Board, browser: WebDriver, seeded: dict[str, Any]) -> None:
    browser.get(board.base + "/")
    queues = _text(browser, "#queues")
    assert "held" in queues and "default" in queues
    assert _text(browser, "[data-live='count:held:ENQUEUED']") == "3"
    assert "nightly" in _text(browser, "main")
    [latency] = [q for q in seeded["app"].engine.admin.queue_latency(300_000) if q.queue == "default"]
    assert latency.count >= 2 and latency.p50_ms <= latency.p95_ms
    assert _text(browser, "[data-live='p50:default']") == millis(latency.p50_ms)
    assert _text(browser, "[data-live='p95:default']") == millis(latency.p95_ms)
    assert _text(browser, "[data-live='p50:held']") == ""  # nothing started there
    # what an operator looks for first: the workers, the latest failures, the latest tasks
    assert "board-worker" in _text(browser, "#overview-workers")
    assert seeded["failed"] in _text(browser, "#recent-failures") and seeded["ok"] not in _text(
        browser, "#recent-failures"
    )
    assert seeded["evil"] in _text(browser, "#recent-tasks")
    # the activity chart's labels are drawn at the size they are read at, not scaled down
    scale = browser.execute_script(
        "const t = document.querySelector(\"[data-chart='default'] text.axis\");"
        "return [t.textContent, t.getBoundingClientRect().height];"
    )
    assert scale[0].startswith("max ") and scale[0].endswith("/min") and scale[1] >= 10, scale
    _shot(browser, "overview")
    browser.get(board.base + "/queues")
    assert browser.find_element(By.CSS_SELECTOR, "#limits-held") is not None
    _shot(browser, "queues")
    browser.get(board.base + "/tasks?status=SUCCESS")
    assert seeded["ok"] in _text(browser, "#tasks")
    _shot(browser, "tasks")
    browser.get(board.base + f"/task/{seeded['ok']}")
    assert _text(browser, "#state") == "SUCCESS"
    arguments = _text(browser, "#arguments")
    assert "***" in arguments and "hunter2-secret" not in browser.page_source
    steps = _text(browser, "#steps")
    assert "double" in steps and "describe" in steps and '"value 42"' in _text(browser, "#result")
    assert "doubled" in _text(browser, "#events") and "42" in _text(browser, "#events")
    messages = _text(browser, "#messages")
    assert "notes" in messages and "after the end" in messages and "no" in messages
    _shot(browser, "task")
    browser.get(board.base + f"/task/{seeded['failed']}")
    assert "ValueError" in _text(browser, "#error")
    traceback = _text(browser, "#traceback")
    assert traceback.startswith("Traceback") and "\n" in traceback and "it broke" in traceback
    _shot(browser, "task-failed")
    browser.get(board.base + "/task/cv-body")
    graph = browser.find_element(By.ID, "canvas-graph")
    nodes = {n.get_attribute("data-task") for n in graph.find_elements(By.CSS_SELECTOR, "g.node")}
    assert nodes == {"cv-grp", "cv-h1", "cv-h2", "cv-body", "cv-tail"}
    assert browser.find_element(By.ID, "graph-current").get_attribute("data-task") == "cv-body"
    kinds = sorted(
        str(e.get_attribute("data-kind")) for e in graph.find_elements(By.CSS_SELECTOR, "line.edge")
    )
    assert kinds == ["chain", "chord", "chord", "group", "group"]
    assert "<script>window.__xss=4</scr…" in graph.text and browser.execute_script(  # a long name is cut
        "return window.__xss === undefined"
    )
    graph.find_element(By.CSS_SELECTOR, "g[data-task='cv-h1']").click()  # each other task links to its page
    wait_for(lambda: browser.current_url.endswith("/task/cv-h1"), what="the page of the graph's task")
    assert browser.find_element(By.ID, "graph-current").get_attribute("data-task") == "cv-h1"
    _shot(browser, "task-canvas")
    browser.get(board.base + "/workers")
    assert "board-worker" in _text(browser, "#workers")
    _shot(browser, "workers")
    browser.get(board.base + "/schedules")
    row = _text(browser, "#schedules")
    assert "nightly" in row and "Europe/Paris" in row and "0 3 * * *" in row and "ACTIVE" in row
    assert "T03:00:00+01:00" in row or "T03:00:00+02:00" in row  # the next fire in the schedule's zone
    _shot(browser, "schedules")
    browser.get(board.base + "/dead-letters")
    assert seeded["dead"] in _text(browser, "#tasks")
    _shot(browser, "dead-letters")


def test_tasks_page_finds_by_id_and_pages_by_key(
    board: Board, browser: WebDriver, seeded: dict[str, Any]
) -> None:
    client: App = seeded["app"]
    for i in range(55):
        client.enqueue("board.work", [i], queue="paging")
    browser.get(board.base + "/tasks?queue=paging")
    first = browser.find_elements(By.CSS_SELECTOR, "#tasks tr td:first-child")
    assert len(first) == 50
    browser.find_element(By.ID, "next").click()
    second = browser.find_elements(By.CSS_SELECTOR, "#tasks tr td:first-child")
    assert len(second) == 5 and "end of the list" in _text(browser, "main")
    browser.get(board.base + "/tasks")
    browser.find_element(By.CSS_SELECTOR, "#find input[name=id]").send_keys(seeded["ok"])
    _click(browser, "#find")
    wait_for(lambda: browser.current_url.endswith(f"/task/{seeded['ok']}"), what="the task page")


def test_live_update_arrives_without_reload(board: Board, browser: WebDriver, seeded: dict[str, Any]) -> None:
    app: App = seeded["app"]
    browser.get(board.base + "/")
    browser.execute_script("window.__stillHere = 42")
    before = int(_text(browser, "[data-live='count:held:ENQUEUED']"))
    for i in range(2):
        app.enqueue("board.work", [100 + i], queue="held")
    wait_for(
        lambda: _text(browser, "[data-live='count:held:ENQUEUED']") == str(before + 2),
        what="the live count to update",
    )
    assert browser.execute_script("return window.__stillHere") == 42


def test_tasks_and_workers_pages_update_live(
    board: Board, browser: WebDriver, seeded: dict[str, Any], database_url: str, tmp_path: Path
) -> None:
    app: App = seeded["app"]
    browser.get(board.base + "/tasks?queue=live")
    browser.execute_script("window.__stillHere = 43")
    assert browser.find_elements(By.CSS_SELECTOR, "#tasks tbody tr") == []
    sent = app.enqueue("<b>board.live</b>", [1], queue="live").id
    wait_for(lambda: sent in _text(browser, "#tasks"), what="the new task on the Tasks page")
    assert "<b>board.live</b>" in _text(browser, "#tasks")  # as text, never as markup
    assert browser.execute_script("return window.__stillHere") == 43
    browser.get(board.base + "/workers")
    browser.execute_script("window.__stillHere = 44")
    assert "board-live-worker" not in _text(browser, "#workers")
    ledger = tmp_path / "effects.log"
    ledger.touch()
    extra = worker_process(
        database_url, ledger, "board-live-worker", app=BOARD_APP, extra_args=("-Q", "live2")
    )
    try:
        wait_for(lambda: "board-live-worker" in _text(browser, "#workers"), what="the new worker on the page")
    finally:
        stop(extra)
    assert browser.execute_script("return window.__stillHere") == 44


def test_script_in_a_task_name_or_argument_is_shown_as_text(
    board: Board, browser: WebDriver, seeded: dict[str, Any]
) -> None:
    browser.get(board.base + "/tasks?" + urlencode({"name": "<script>window.__xss=1</script>"}))
    assert "<script>window.__xss=1</script>" in _text(browser, "#tasks")
    browser.get(board.base + f"/task/{seeded['evil']}")
    assert "onerror='window.__xss=2'" in _text(browser, "#arguments")
    assert browser.execute_script("return window.__xss === undefined")


# -- actions -------------------------------------------------------------------------------
def test_every_action_changes_the_database(
    board: Board, browser: WebDriver, seeded: dict[str, Any], database_url: str
) -> None:
    app: App = seeded["app"]
    admin = app.engine.admin
    _press(browser, board.base + "/queues", "tr[id='queue-held'] button[data-action='queue-pause']")
    wait_for(lambda: any(q.paused for q in admin.queues(("held",))), what="the pause")
    _press(browser, board.base + "/queues", "tr[id='queue-held'] button[data-action='queue-resume']")
    wait_for(lambda: not admin.queues(("held",))[0].paused, what="the resume")
    form = browser.find_element(By.ID, "limits-held")
    field = form.find_element(By.NAME, "concurrency")
    field.clear()
    field.send_keys("7")
    rate = form.find_element(By.NAME, "rate_limit")
    rate.clear()
    rate.send_keys("30/m")
    kept = form.find_element(By.NAME, "result_expires")
    kept.clear()
    kept.send_keys("never")
    _click(browser, "#limits-held")
    wait_for(lambda: admin.queues(("held",))[0].concurrency == 7, what="the new limit")
    assert admin.queues(("held",))[0].rate_limit_max == 30
    assert admin.queues(("held",))[0].result_expires_sec == 0  # kept until deleted by hand
    browser.get(board.base + "/queues")
    assert (
        browser.find_element(By.ID, "limits-held")
        .find_element(By.NAME, "result_expires")
        .get_attribute("value")
        == "never"
    )

    target = seeded["held"][0]
    _press(browser, board.base + f"/task/{target}", "button[data-action='cancel']")
    wait_for(lambda: app.AsyncResult(target).status == "CANCELLED", what="the cancel")
    _press(browser, board.base + f"/task/{target}", "button[data-action='resume']")
    wait_for(lambda: app.AsyncResult(target).status == "ENQUEUED", what="the resume")

    browser.get(board.base + f"/task/{seeded['ok']}")
    forks = browser.find_elements(By.CSS_SELECTOR, "#steps button[data-action='fork']")
    forks[1].click()  # from step 2: step 1's checkpoint is kept
    wait_for(lambda: any(t.forked_from == seeded["ok"] for t in app.list_tasks(limit=500)), what="the fork")

    _press(browser, board.base + "/schedules", "button[data-action='schedule-pause']")
    wait_for(lambda: app.get_schedule("nightly").status.value == "PAUSED", what="the schedule pause")
    _press(browser, board.base + "/schedules", "button[data-action='schedule-resume']")
    wait_for(lambda: app.get_schedule("nightly").status.value == "ACTIVE", what="the schedule resume")
    _press(browser, board.base + "/schedules", "button[data-action='schedule-trigger']")
    wait_for(
        lambda: len(app.list_tasks(name="board.work", queue="default", limit=500)) > 1, what="the trigger"
    )

    def backfill_form() -> bool:  # opened again if an earlier form's answer replaced the page
        browser.get(board.base + "/schedules")
        forms = browser.find_elements(By.ID, "backfill-nightly")
        if forms:
            forms[0].find_element(By.NAME, "since").send_keys("2026-01-10T00:00")
            forms[0].find_element(By.NAME, "until").send_keys("2026-01-13T00:00")
            forms[0].find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        return bool(forms)

    def fired() -> list[str]:  # the schedule's fires of January 2026: only the backfill makes them
        return [t.task_id for t in app.list_tasks(name="board.work", limit=1000) if "2026-01-1" in t.task_id]

    assert fired() == []
    wait_for(backfill_form, what="the backfill form")
    wait_for(lambda: len(fired()) == 3, what="the backfill of three nightly fires (3:00 Paris = 2:00 UTC)")
    assert all(task_id.startswith("sched-nightly-") for task_id in fired())

    _press(browser, board.base + f"/task/{seeded['failed']}", "button[data-action='retry']")
    wait_for(
        lambda: [t for t in app.list_tasks(limit=1000) if t.forked_from == seeded["failed"]], what="the retry"
    )
    [retried] = [t for t in app.list_tasks(limit=1000) if t.forked_from == seeded["failed"]]
    assert retried.task_id != seeded["failed"] and app.AsyncResult(seeded["failed"]).status == "ERROR"
    wait_for(lambda: browser.current_url.endswith(f"/task/{seeded['failed']}"), what="back on the task page")

    running = app.enqueue("board.work", [8], queue="victims").id  # no worker: cancelled before it runs
    _press(browser, board.base + f"/task/{running}", "button[data-action='terminate']")
    wait_for(lambda: app.AsyncResult(running).status == "CANCELLED", what="the terminate")
    db = open_system_database(database_url)
    try:  # the worker running it would kill its process on this event
        assert db.task_event_get(running, "terminate") == ("json", '"SIGTERM"')
    finally:
        db.close()

    _press(browser, board.base + "/dead-letters", "button[data-action='resume-many']")
    wait_for(lambda: app.AsyncResult(seeded["dead"]).status == "ENQUEUED", what="the bulk resume")


def test_an_action_without_the_csrf_token_is_refused(board: Board, seeded: dict[str, Any]) -> None:
    app: App = seeded["app"]
    target = seeded["held"][1]
    body = f"task_id={target}&next=/".encode()
    status, text, _ = _http(board.base + "/action/cancel", "POST", body)
    assert status == 403 and b"CSRF" in text
    status, _, _ = _http(board.base + "/action/cancel", "POST", body + b"&csrf=forged")
    assert status == 403
    assert app.AsyncResult(target).status == "ENQUEUED"
    status, _, _ = _http(board.base + "/action/cancel", "GET")
    assert status == 405
    token = {"csrf": _csrf(board)}
    done = _http(board.base + "/action/cancel", "POST", body + b"&" + urlencode(token).encode())
    assert done[0] == 200 and app.AsyncResult(target).status == "CANCELLED"  # 303 to the page, followed
    again = _http(board.base + "/action/cancel", "POST", body + b"&" + urlencode(token).encode())
    assert again[0] == 409 and b"nothing to do" in again[1]
    bad = _http(
        board.base + "/action/fork",
        "POST",
        urlencode({**token, "task_id": target, "start_step": "x"}).encode(),
    )
    assert bad[0] == 400
    assert _http(board.base + "/action/resume", "POST", body + b"&" + urlencode(token).encode())[0] == 200
    backfill = {**token, "schedule": "nightly", "since": "last tuesday"}
    bad = _http(board.base + "/action/schedule-backfill", "POST", urlencode(backfill).encode())
    assert bad[0] == 400 and b"since must be an ISO date-time" in bad[1]
    future = {**backfill, "since": "2026-01-10T00:00", "until": "2999-01-01T00:00"}
    bad = _http(board.base + "/action/schedule-backfill", "POST", urlencode(future).encode())
    assert bad[0] == 400 and b"in the future" in bad[1]
    bad = _http(
        board.base + "/action/schedule-backfill", "POST", urlencode({**token, "schedule": "nightly"}).encode()
    )
    assert bad[0] == 400 and b"since is required" in bad[1]
    retry = _http(board.base + "/action/retry", "POST", body + b"&" + urlencode(token).encode())
    assert retry[0] == 400 and b"only a task in ERROR can be retried" in retry[1]
    limits = {**token, "queue": "held", "concurrency": "", "worker_concurrency": "", "result_expires": "soon"}
    bad = _http(board.base + "/action/queue-limits", "POST", urlencode(limits).encode())
    assert bad[0] == 400 and b"kept takes a positive number of seconds, 'never' or 'default'" in bad[1]
    assert (
        _http(board.base + "/action/backfill", "POST", urlencode({**token, "schedule": "nightly"}).encode())[
            0
        ]
        == 404
    )


def test_without_credentials_everything_is_refused_and_read_only_changes_nothing(
    guarded: Board, seeded: dict[str, Any]
) -> None:
    app: App = seeded["app"]
    target = seeded["held"][2]
    for path in ("/", "/tasks", "/live"):
        status, _, headers = _http(guarded.base + path)
        assert status == 401 and headers.get("www-authenticate", "").startswith("Basic")
    # Flower's API answers 401 without a challenge; /metrics and /healthcheck need none
    status, body, headers = _http(guarded.base + "/api/tasks")
    assert status == 401 and body == b"" and "www-authenticate" not in headers
    assert _http(guarded.base + "/metrics")[0] == 200 and _http(guarded.base + "/healthcheck")[0] == 200
    wrong = {"Authorization": "Basic " + base64.b64encode(b"admin:wrong").decode()}
    assert _http(guarded.base + "/", headers=wrong)[0] == 401
    good = {"Authorization": "Basic " + base64.b64encode(b"admin:s3cret").decode()}
    status, page, _ = _http(guarded.base + f"/task/{target}", headers=good)
    assert status == 200 and b"data-action" not in page  # no forms in read-only mode
    status, _, _ = _http(guarded.base + f"/api/task/revoke/{target}", "POST", b"", good)
    assert status == 403
    assert app.AsyncResult(target).status == "ENQUEUED"


def test_listening_beyond_localhost_needs_authentication(database_url: str) -> None:
    done = run_pgtasks("-A", BOARD_APP, "dashboard", "--address", "0.0.0.0", url=database_url, timeout=60)
    assert done.returncode == 2
    assert "without authentication: give --basic-auth user:password" in done.stderr


# -- Flower's API and metrics --------------------------------------------------------------
def test_flower_api_shapes(board: Board, seeded: dict[str, Any]) -> None:
    app: App = seeded["app"]
    status, body, headers = _http(board.base + "/api/tasks?state=SUCCESS&limit=1000")
    tasks = json.loads(body)
    assert status == 200 and seeded["ok"] in tasks and "x-pgtasks-next" not in headers
    for task_id, task in tasks.items():
        assert set(task) == FLOWER_TASK_FIELDS and task["uuid"] == task_id and task["state"] == "SUCCESS"
    everything = json.loads(_http(board.base + "/api/tasks?limit=1000")[1])
    second = json.loads(_http(board.base + "/api/tasks?limit=2&offset=1")[1])
    assert list(second) == list(everything)[1:3]
    info = json.loads(_http(board.base + f"/api/task/info/{seeded['ok']}")[1])
    assert set(info) == FLOWER_TASK_FIELDS and info["name"] == "board.work"
    assert info["kwargs"] == "{'token': '***'}" and info["args"] == "[21]"  # Python reprs, as Flower
    assert info["worker"] == "board-worker" and info["runtime"] is not None
    result = json.loads(_http(board.base + f"/api/task/result/{seeded['ok']}")[1])
    assert result == {"task-id": seeded["ok"], "state": "SUCCESS", "result": "value 42"}
    failure = json.loads(_http(board.base + f"/api/task/result/{seeded['failed']}")[1])
    assert set(failure) == {"task-id", "state", "result", "traceback"} and failure["state"] == "FAILURE"
    request = json.dumps({"args": [5], "kwargs": {"token": "x"}, "queue": "held"}).encode()
    headers = {"Content-Type": "application/json"}
    status, body, _ = _http(board.base + "/api/task/async-apply/board.work", "POST", request, headers)
    applied = json.loads(body)
    assert status == 200 and set(applied) == {"task-id", "state"} and applied["state"] == "PENDING"
    assert app.AsyncResult(applied["task-id"]).status == "ENQUEUED"
    assert _http(board.base + "/api/task/async-apply/no.such.task", "POST", b"{}", headers)[0] == 404
    bad = _http(board.base + "/api/task/async-apply/board.work", "POST", b'{"args": 5}', headers)
    assert bad == (400, b"args must be an array", bad[2])
    status, body, _ = _http(board.base + f"/api/task/revoke/{applied['task-id']}", "POST", b"")
    assert json.loads(body) == {"message": f"Revoked '{applied['task-id']}'"}
    assert app.AsyncResult(applied["task-id"]).status == "CANCELLED"
    cross = _http(
        board.base + f"/api/task/revoke/{seeded['held'][1]}", "POST", b"", {"Origin": "http://evil.example"}
    )
    assert cross[0] == 403 and app.AsyncResult(seeded["held"][1]).status == "ENQUEUED"
    lengths = json.loads(_http(board.base + "/api/queues/length")[1])
    assert set(lengths) == {"active_queues"}
    assert all(set(q) == {"name", "messages"} for q in lengths["active_queues"])
    # the queues the workers consume, with their waiting tasks (Flower: the broker's counts)
    waiting = {s.name: s.counts.get("ENQUEUED", 0) for s in app.engine.admin.queue_stats()}
    assert {q["name"]: q["messages"] for q in lengths["active_queues"]} == {
        "default": waiting.get("default", 0)
    }
    workers = json.loads(_http(board.base + "/api/workers?refresh=1&workername=board-worker")[1])
    for worker in workers.values():
        assert {
            "stats",
            "active_queues",
            "registered",
            "active",
            "scheduled",
            "reserved",
            "revoked",
            "conf",
        } <= set(worker)
        assert "board.work" in worker["registered"]


def test_metrics_parse_with_prometheus_client(board: Board, seeded: dict[str, Any]) -> None:
    app: App = seeded["app"]
    status, body, headers = _http(board.base + "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert {"pgtasks_tasks", "pgtasks_oldest_waiting_seconds", "pgtasks_workers_online"} <= set(families)
    assert {"pgtasks_queue_paused", "pgtasks_schedule_lag_seconds"} <= set(families)
    samples = {(s.labels["queue"], s.labels["state"]): s.value for s in families["pgtasks_tasks"].samples}
    stats = {s.name: s.counts for s in app.engine.admin.queue_stats()}
    assert samples[("held", "ENQUEUED")] == stats["held"]["ENQUEUED"]
    oldest = {s.labels["queue"]: s.value for s in families["pgtasks_oldest_waiting_seconds"].samples}
    assert oldest["held"] > 0
    assert all(not name.startswith("pgtasks") or name.startswith("pgtasks_") for name in families)


def test_dashboard_without_an_app_reads_the_database_url(database_url: str, seeded: dict[str, Any]) -> None:
    port = _free_port()
    env = cli_env(None, {"PGTASKS_DATABASE_URL": ""})
    proc = spawn_pgtasks("dashboard", "--port", str(port), "--database-url", database_url, env=env)
    try:
        wait_for(lambda: _safe_status(f"http://127.0.0.1:{port}/live") == 200, what="the dashboard")
        status, body, _ = _http(f"http://127.0.0.1:{port}/task/{seeded['ok']}")
        assert status == 200 and seeded["ok"].encode() in body
        # Flower 2.2's default: the API needs credentials or FLOWER_UNAUTHENTICATED_API
        status, body, _ = _http(f"http://127.0.0.1:{port}/api/task/info/{seeded['ok']}")
        assert status == 401 and b"FLOWER_UNAUTHENTICATED_API environment variable is required" in body
    finally:
        stop(proc)


def _csrf(board: Board) -> str:
    page = _http(board.base + "/queues")[1].decode()
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def _safe_status(url: str) -> int:
    try:
        return _http(url)[0]
    except OSError:
        return 0
