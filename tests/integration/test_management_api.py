"""The management API that the dashboard and the CLI act through, on App and Client, on both
dialects: pages of tasks by key, a worker's tasks, children and canvas links, masked
arguments, terminate, queue listing and settings, live workers, the database clock, and the
schedules a Client manages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

import pgtasks
from pgtasks import App, Client, Status
from pgtasks.sysdb.records import EndReason, ExecutorInfo
from tests.support.inprocess import running_worker, wait_for


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    app = App("mgmt", database_url=database_url, poll_interval=0.02)
    yield app
    app.close()


@pytest.fixture
def client(app: App, database_url: str) -> Iterator[Client]:
    app.engine.admin.migrate()
    client = Client(database_url)
    yield client
    client.close()


def test_pages_of_tasks_walk_every_task_once_newest_first(app: App) -> None:
    @app.task(queue="pages")
    def job(n: int) -> int:
        return n

    ids = [job.delay(n).id for n in range(7)]
    seen: list[str] = []
    page = app.task_page(queue="pages", limit=3)
    sizes = [len(page.tasks)]
    seen += [t.task_id for t in page.tasks]
    while page.next_page is not None:
        page = app.task_page(queue="pages", limit=3, after=page.next_page)
        sizes.append(len(page.tasks))
        seen += [t.task_id for t in page.tasks]
    assert sizes == [3, 3, 1]
    assert seen == ids[::-1]
    assert app.task_page(queue="pages", limit=7).next_page is None  # exactly one page: no next
    assert [t.task_id for t in app.task_page(status="SUCCESS", queue="pages").tasks] == []
    with pytest.raises(
        pgtasks.ConfigurationError, match=r"after must be the next_page of a TaskPage, not 'x\.1'"
    ):
        app.task_page(after="x.1")
    with pytest.raises(pgtasks.ConfigurationError, match="limit must be a positive integer"):
        app.task_page(limit=0)


def test_a_workers_tasks_children_and_links(app: App) -> None:
    @app.task
    def child(n: int) -> int:
        return n * 2

    @app.task
    def parent() -> str:
        return child.delay(21).id

    with running_worker(app, executor_id="w-mgmt"):
        sent = parent.delay()
        child_id = sent.get(timeout=20)
        assert pgtasks.AsyncResult(child_id, app.engine).get(timeout=20) == 42
    done = app.list_tasks(worker="w-mgmt")
    assert {t.task_id for t in done} == {sent.id, child_id}
    assert app.list_tasks(worker="w-other") == []
    assert [t.task_id for t in app.task_page(worker="w-mgmt", status="SUCCESS").tasks] == [child_id, sent.id]
    assert app.task_children(sent.id) == [child_id]
    links = app.task_links(sent.id)
    assert [(link.parent_id, link.child_id, link.kind, link.done) for link in links] == [
        (sent.id, child_id, "sent", True)
    ]
    info = app.get_task(sent.id, steps=False)
    assert info is not None and info.steps is None and info.status is Status.SUCCESS
    assert app.get_task(sent.id).steps == ()  # type: ignore[union-attr]


def test_arguments_declared_secret_are_masked_where_the_task_is_known(app: App, client: Client) -> None:
    @app.task(secret_args=("token",))
    def login(user: str, token: str) -> None:
        return None

    handle = login.delay("ann", token="hunter2")
    info = app.get_task(handle.id)
    assert info is not None
    assert app.shown_inputs(info) == '{"args":["ann"],"kwargs":{"token":"***"}}'
    assert "hunter2" in client.shown_inputs(info)  # a Client has no task code to know the secret
    assert app.registered_task_names() == [login.name]
    assert client.registered_task_names() == []


def test_cancel_with_terminate_asks_the_worker_to_kill_the_process(app: App) -> None:
    handle = app.enqueue("mgmt.slow")
    plain = app.enqueue("mgmt.slow")
    assert app.cancel_task(handle.id, terminate=True, signal="SIGKILL")
    assert app.cancel_task(plain.id)
    sysdb = app.engine.database.sysdb
    assert sysdb.task_event_get(handle.id, "terminate") == ("json", '"SIGKILL"')
    assert sysdb.task_event_get(plain.id, "terminate") is None
    info = app.get_task(handle.id)
    assert info is not None and info.status is Status.CANCELLED and info.end_reason is EndReason.CANCELLED
    assert not app.cancel_task(handle.id, terminate=True)  # finished: nothing to do


def test_revoke_remembers_an_id_no_task_has_yet(app: App, client: Client) -> None:
    waiting = app.enqueue("mgmt.slow")
    assert client.revoke_task(waiting.id) and not client.revoke_task(waiting.id)  # finished now
    assert not client.revoke_task("mgmt-future")  # no task cancelled now: remembered
    sent = app.enqueue("mgmt.add", [1, 2], task_id="mgmt-future")
    info = app.get_task(sent.id)
    assert info is not None and info.status is Status.CANCELLED


def test_arguments_are_checked_against_the_registered_function(app: App, client: Client) -> None:
    @app.task(name="mgmt.pair")
    def pair(x: int, y: int = 0) -> int:
        return x + y

    app.check_task_arguments("mgmt.pair", [1], {"y": 2})
    with pytest.raises(TypeError, match=r"^pair\(\) too many positional arguments$"):
        app.check_task_arguments("mgmt.pair", [1, 2, 3], {})
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'z'"):
        app.check_task_arguments("mgmt.pair", [1], {"z": 2})
    client.check_task_arguments("mgmt.pair", [1, 2, 3], {})  # a Client knows no task: unchecked
    app.check_task_arguments("mgmt.unknown", [1, 2, 3], {})


def test_queues_are_listed_with_counts_and_changed_by_setting(app: App) -> None:
    app.enqueue("mgmt.a", queue="busy")
    app.enqueue("mgmt.a", queue="busy", countdown=3600)
    app.pause_queue("quiet")  # a queue with a row and no task
    rows = {q.name: q for q in app.list_queues()}
    assert set(rows) == {"busy", "quiet"}
    assert dict(rows["busy"].counts) == {"ENQUEUED": 1, "DELAYED": 1, "PENDING": 0}
    assert rows["busy"].oldest_waiting_seconds is not None and rows["busy"].oldest_waiting_seconds >= 0
    assert dict(rows["quiet"].counts) == {"ENQUEUED": 0, "DELAYED": 0, "PENDING": 0}
    assert rows["quiet"].oldest_waiting_seconds is None and rows["quiet"].settings.paused

    stored = app.set_queue_settings("busy", concurrency=2, rate_limit_max=10, rate_limit_period_sec=60.0)
    assert (stored.concurrency, stored.rate_limit_max, stored.rate_limit_period_sec) == (2, 10, 60.0)
    again = app.set_queue_settings("busy", worker_concurrency=1)
    assert (again.concurrency, again.worker_concurrency, again.rate_limit_max) == (2, 1, 10)  # others kept
    with pytest.raises(pgtasks.ConfigurationError, match="unknown queue setting 'paused', 'speed'; one of"):
        app.set_queue_settings("busy", speed=3, paused=True)
    with pytest.raises(pgtasks.ConfigurationError, match="concurrency must be an integer from 1 to 2,147"):
        app.set_queue_settings("busy", concurrency=0)
    with pytest.raises(pgtasks.ConfigurationError, match="queue name"):
        app.set_queue_settings("", concurrency=1)


def test_activity_and_latency_count_the_tasks_that_started(app: App) -> None:
    @app.task
    def quick() -> None:
        return None

    with running_worker(app):
        for handle in [quick.delay() for _ in range(3)]:
            handle.get(timeout=20)
    started = sum(a.count for a in app.queue_activity() if a.queue == "default" and a.status == "SUCCESS")
    assert started == 3
    [latency] = [q for q in app.queue_latency() if q.queue == "default"]
    assert latency.count == 3 and 0 <= latency.p50_ms <= latency.p95_ms


def test_live_workers_and_the_database_clock(app: App, client: Client) -> None:
    assert abs(client.now_ms() - time.time() * 1000) < 60_000
    api = app.engine.worker_api
    api.register_executor(ExecutorInfo("w-live", "host", 1, "v1", ("default",), lease_ms=600_000))
    api.register_executor(ExecutorInfo("w-gone", "host", 2, "v1", ("default",), lease_ms=1))

    def only_the_live_one() -> bool:
        return [e.executor_id for e in client.list_workers()] == ["w-live"]

    wait_for(only_the_live_one, what="the short lease to end")
    assert {e.executor_id for e in app.engine.admin.executors()} == {"w-live", "w-gone"}


def test_a_client_manages_the_apps_schedules(app: App, client: Client) -> None:
    app.schedule("tick", "mgmt.tick", every=3600)
    assert [s.name for s in client.schedules_list()] == ["tick"]
    assert client.pause_schedule("tick").status.value == "PAUSED"
    assert app.get_schedule("tick").status.value == "PAUSED"
    fired: Any = client.trigger_schedule("tick")
    assert fired.status == "ENQUEUED" and fired.id.startswith("sched-tick-manual-")
    assert client.delete_schedule("tick") and app.schedules_list() == []


def test_prune_tasks_counts_then_deletes_the_finished_tasks_of_a_queue(app: App) -> None:
    waiting = app.enqueue("mgmt.a", queue="old")  # unfinished: never pruned
    finished = [app.enqueue("mgmt.a", queue="old") for _ in range(2)]
    elsewhere = app.enqueue("mgmt.a", queue="other")
    assert all(app.cancel_task(h.id) for h in [*finished, elsewhere])
    wait_for(
        lambda: app.prune_tasks(older_than=0, dry_run=True) == {"old": 2, "other": 1},
        what="the cancelled tasks to be older than 0 s",
    )
    assert app.prune_tasks(older_than=0, queue="old") == {"old": 2}
    assert [app.get_task(h.id) for h in finished] == [None, None]
    assert app.get_task(waiting.id) is not None
    assert app.prune_tasks(older_than=0, dry_run=True) == {"other": 1}  # the dry run deleted nothing
