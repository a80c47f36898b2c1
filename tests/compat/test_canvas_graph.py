"""Issue 29, entries 3 to 6, on a real `pgtasks worker` (one for the module): the ids that tie a
workflow together, results that round-trip, the rest of the task semantics and a revoke that
comes before its task, as Celery documents them (``celery.app.task`` Context: ``parent_id``,
``root_id``; ``celery.result``: ``parent``, ``children``, ``GroupResult.save``/``restore``,
``as_tuple``, ``result_from_tuple``; Canvas; Calling: ``ignore_result``, ``expires``;
Workers: "Revoking tasks") and as the real Celery 5 on Redis was seen doing. The scenarios are
in tests/compat/apps/canvas_graph.py and what each must observe in canvas_expected.py;
test_celery_reference.py runs them against the real Celery. The ids are also checked where
only pgtasks keeps them: the stored task and the dashboard."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import chain, chord, group
from celery.canvas import StampingVisitor
from celery.exceptions import TaskRevokedError
from celery.result import AsyncResult
from celery.signals import before_task_publish
from celery.worker import state as worker_state

from pgtasks import Client
from tests.compat.apps import canvas_errors_app as proj
from tests.compat.apps.canvas_errors_app import replaced_by_stamps_seen, stamps_seen
from tests.compat.apps.canvas_expected import EXPECTED
from tests.compat.apps.canvas_probe import WAIT, run
from tests.support.celery_worker import celery_worker, module_celery_worker
from tests.support.cli import cli_env, spawn_pgtasks
from tests.support.inprocess import wait_for
from tests.support.pgserver import free_port
from tests.support.processes import stop

MODULE = "tests.compat.apps.canvas_errors_app"


@pytest.fixture(scope="module")
def ledger(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    folder = tmp_path_factory.mktemp("canvas-graph")
    with module_celery_worker(proj.app, MODULE, pg_server_url, folder, "graph-w1", concurrency=4) as path:
        yield path


def observe(name: str, ledger: Path) -> None:
    assert run(name, ledger) == EXPECTED[name]


@pytest.mark.parametrize(
    "name",
    [
        "chain_ids",
        "group_in_a_chain_ids",
        "chord_ids",
        "standalone_chord_ids",
        "nested_chord_ids",
        "callback_and_errback_ids",
    ],
)
def test_parent_and_root_ids(ledger: Path, name: str) -> None:
    """``self.request.parent_id`` is the task that started this one (the previous task of a
    chain, the task before a group or chord header, the header task that completed a chord
    body last, the task a callback or errback follows); ``root_id`` is the first task of the
    workflow. A chain's results know their parents (``AsyncResult.parent``); a task's
    ``children`` are what it started (a group after it: its GroupResult). Seen on Celery with
    Redis: a chord sent alone gives each header task its own root (no parent), and the body
    the root and parent of the header task that completed it."""
    observe(name, ledger)


def test_group_and_group_index(ledger: Path) -> None:
    """``self.request.group`` is the id of the group (or chord header) the task gives a result
    to and ``group_index`` its position there, as the real Celery on Redis sets them (of a chain
    in a group, only its last task); stored with the task, so a retried task keeps them."""
    observe("group_places", ledger)


class MonitoringId(StampingVisitor):
    """Stamps every task with one id, and callbacks with where they hang."""

    def __init__(self, value: str) -> None:
        self.value = value

    def on_signature(self, sig: Any, **headers: Any) -> dict[str, Any]:
        return {"mtask_id": self.value}

    def on_callback(self, callback: Any, **headers: Any) -> dict[str, Any]:
        return {"on": "callback"}


def test_a_stamped_task_has_its_stamps_in_headers_and_request(ledger: Path) -> None:
    """Canvas "Stamping": ``sig.stamp(visitor)`` stamps are sent as the ``stamps`` and
    ``stamped_headers`` headers (never as message properties) and the worker's request has
    them, each stamp also as an attribute; a retried task keeps them, a replacement adds them
    to its own; ``append_stamps=True`` keeps both values of a stamp as a list."""
    published: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def seen(headers: dict[str, Any], properties: dict[str, Any], **_: Any) -> None:
        published.append((headers, properties))

    sig = stamps_seen.s(retry=True)
    sig.stamp(MonitoringId("m-1"), other=7)
    before_task_publish.connect(seen)
    try:
        got = sig.apply_async().get(timeout=WAIT)
    finally:
        before_task_publish.disconnect(seen)
    expected = {"mtask_id": "m-1", "other": 7}
    assert got == {"stamps": expected, "stamped_headers": ["mtask_id", "other"], "as_attributes": expected}
    ((headers, properties),) = published
    assert headers["stamps"] == expected and sorted(headers["stamped_headers"]) == ["mtask_id", "other"]
    assert not {"stamped_headers", "mtask_id", "other"} & set(properties)
    sig.stamp(MonitoringId("m-2"), append_stamps=True)
    assert sig.options["mtask_id"] == ["m-2", "m-1"]
    replaced = replaced_by_stamps_seen.si()
    replaced.stamp(mtask_id="m-5")
    assert replaced.delay().get(timeout=WAIT)["stamps"] == {"mtask_id": "m-5", "replaced": "yes"}


def test_every_task_of_a_stamped_canvas_is_stamped(ledger: Path) -> None:
    """A chain, group and chord pass the stamps to every task (a chord's header and body,
    nested workflows); ``stamp_links`` gives the callbacks the visitor's ``on_callback`` stamps,
    not the stamps of the task they follow."""
    first, member, nested = stamps_seen.si(), stamps_seen.si(), [stamps_seen.si(), stamps_seen.si()]
    tasks = [first, member, *nested]
    results = [AsyncResult(t.freeze().id, app=proj.app) for t in tasks]
    canvas = chain(first, chord([member, group(nested)], stamps_seen.s()))
    canvas.stamp(MonitoringId("m-3"))
    body = canvas.apply_async().get(timeout=WAIT)
    stamped = {"mtask_id": "m-3"}
    assert body["stamps"] == stamped
    assert [r.get(timeout=WAIT)["stamps"] for r in results] == [stamped] * len(tasks)
    alone = stamps_seen.si()
    alone.options["link"] = dict(stamps_seen.si())  # as a link travels: a dict
    alone.stamp_links(MonitoringId("m-4"))
    (linked,) = alone.options["link"]
    assert "stamped_headers" not in alone.options
    assert {k: linked.options[k] for k in linked.options["stamped_headers"]} == {
        "on": "callback",
        "mtask_id": "m-4",
    }


def _dashboard_task(url: str, task_id: str, log: Path) -> dict[str, Any]:
    port = free_port()
    args = ("dashboard", "--port", str(port), "--database-url", url)
    # Flower's API answers without credentials only when opened, as in Flower 2.2.
    board = spawn_pgtasks(*args, env=cli_env(url, {"FLOWER_UNAUTHENTICATED_API": "true"}), output=log)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert board.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(base + "/live", timeout=5) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    try:
        wait_for(up, timeout=30, what="the dashboard")
        with urllib.request.urlopen(f"{base}/api/task/info/{task_id}", timeout=10) as response:
            return dict(json.loads(response.read()))
    finally:
        stop(board)


def test_the_ids_are_stored_with_the_task_and_shown_by_the_dashboard(ledger: Path, tmp_path: Path) -> None:
    """Where pgtasks keeps a task, the ids Celery gives it: the stored task's parent and root
    (``pgtasks.Client.get_task``), and Flower's ``/api/task/info/<id>`` of the dashboard
    (``parent_id``, ``root_id``)."""
    a, b, c = proj.ids.si("a"), proj.ids.si("b"), proj.ids.si("c")
    for sig in (a, b, c):
        sig.freeze()
    chain(a, b, c).delay().get(timeout=WAIT)
    url = str(proj.app.conf.broker_url)
    client = Client(url)
    try:
        stored = {name: client.get_task(sig.id) for name, sig in (("a", a), ("b", b), ("c", c))}
    finally:
        client.close()
    parents = {name: info.parent_task_id for name, info in stored.items() if info}
    assert parents == {"a": None, "b": a.id, "c": b.id}
    roots = {name: getattr(info, "root_task_id", None) for name, info in stored.items()}
    assert roots == {"a": a.id, "b": a.id, "c": a.id}
    shown = _dashboard_task(url, str(c.id), tmp_path / "dashboard.log")
    assert (shown["parent_id"], shown["root_id"]) == (b.id, a.id)


@pytest.mark.parametrize(
    "name", ["group_result_save_and_restore", "results_as_tuples", "group_result_as_an_argument"]
)
def test_results_that_round_trip(ledger: Path, name: str) -> None:
    """``GroupResult.save()`` then ``GroupResult.restore(id)`` (or the backend's
    ``restore_group(id, cache=False)``) gives the same members; one built by hand too, until
    ``delete()``; an empty group restores empty; an unknown id restores None.
    ``as_tuple()`` through JSON and ``result_from_tuple`` rebuild a group result with its
    parent, a chord's result with its header group and the task before it, and a nested
    group's flat members. A group's ``as_tuple()`` passed as an argument rebuilds in the
    task; a task returning a chain's result stores its tuple (two items, the parent a list)."""
    observe(name, ledger)


def test_signatures_of_nested_workflows_rebuild_from_json(ledger: Path) -> None:
    """``signature(dict)`` of a chain, group or chord holding chords and groups, after JSON,
    gives back the same nesting (this holds today)."""
    observe("signatures_rebuilt_from_json", ledger)


@pytest.mark.parametrize(
    "name",
    [
        "ignore_result",
        "expires_while_waiting",
        "chord_or_signature",
        "add_to_chord",
        "group_partials",
        "nested_tails",
    ],
)
def test_the_rest_of_the_task_semantics(ledger: Path, name: str) -> None:
    """``ignore_result`` (a task's, a call's): the task runs, ``get()`` returns None at once,
    and read by id it stays PENDING with no result. ``expires`` (seconds or a datetime) on a
    task still waiting: it never runs, reads REVOKED (ready, not failed) and ``get`` raises
    ``TaskRevokedError``. ``chord | signature`` is a chord whose body goes on with the
    signature; ``chain | chord`` a chain. Arguments and keyword arguments given to a group
    are prepended to, and merged into, every member (a chord's header included); given to a
    chain, only its first task's. Groups at the end of chains nested in chords and groups
    complete with the nested lists Celery gives."""
    observe(name, ledger)


def test_worker_state_is_a_view_of_the_database(ledger: Path) -> None:
    """``celery.worker.state`` (which Celery's own test suite imports): revoked ids, the
    requests workers hold and the tasks they finished, read from the database that all
    workers share (``revoked_stamps``: see the test below)."""
    proj.app.set_current()
    task_id = "revoked-state-" + str(free_port())
    assert task_id not in worker_state.revoked
    worker_state.revoked.add(task_id)
    assert task_id in worker_state.revoked and task_id in set(worker_state.revoked)
    assert not worker_state.reserved_requests
    running = proj.sleeping.delay(1)
    wait_for(lambda: running.id in worker_state.active_requests, WAIT, "the task to be active")
    held = {r.id: r for r in worker_state.active_requests}
    assert held[running.id].task == proj.sleeping.name and held[running.id].args == (1,)
    running.get(timeout=WAIT)
    assert running.id not in worker_state.active_requests
    assert worker_state.total_count[proj.sleeping.name] >= 1
    assert worker_state.SOFTWARE_INFO["sw_ident"] == "pgtasks"


def test_revoke_by_stamped_headers_is_durable(ledger: Path) -> None:
    """``revoke_by_stamped_headers``: a task sent later whose stamp matches (one of its values
    when the stamp is a list) ends REVOKED without running, and so does what waits on it in a
    chain; another stamp runs; the revoked stamps are in the database (``worker_state``) until
    ``revoked_stamps.clear()``."""
    proj.app.set_current()
    worker_state.revoked_stamps.clear()
    mark = f"mark-{free_port()}"
    reply = proj.app.control.revoke_by_stamped_headers({"monitoring_id": [mark]}, reply=True)
    assert reply and all(
        r == {"ok": f"headers {{'monitoring_id': ['{mark}']}} flagged as revoked, but not terminated"}
        for node in reply
        for r in node.values()
    )
    assert dict(worker_state.revoked_stamps) == {"monitoring_id": [mark]}
    alone, listed, other = proj.add.si(1, 1), proj.add.si(1, 2), proj.add.si(2, 2)
    alone.stamp(monitoring_id=mark)
    listed.stamp(monitoring_id=["x", mark])
    other.stamp(monitoring_id="other")
    in_chain = chain(proj.add.si(0, 0), alone.clone()).apply_async()
    for sent in (alone.apply_async(), listed.apply_async(), in_chain):
        with pytest.raises(TaskRevokedError):
            sent.get(timeout=WAIT)
        assert sent.status == "REVOKED"
    assert other.apply_async().get(timeout=WAIT) == 4
    worker_state.revoked_stamps.clear()
    assert dict(worker_state.revoked_stamps) == {}
    assert alone.clone().apply_async().get(timeout=WAIT) == 2


def test_add_to_chord_grows_the_header_in_the_database(ledger: Path) -> None:
    """``self.add_to_chord``: a chord added to a chord is one more header task (the body gets
    its result last); a task in no chord gets Celery's ValueError, and nothing is sent."""
    added = (group([proj.add_chord_to_my_chord.s([1, 2, 3], 4)]) | proj.identity.s()).delay()
    assert added.get(timeout=WAIT) == [0, 5 + 6 + 7]
    alone = proj.add_to_my_chord.delay([1], 4)
    with pytest.raises(ValueError, match="Current task is not member of any chord"):
        alone.get(timeout=WAIT)


def test_a_task_rejected_with_requeue_is_delivered_again(ledger: Path) -> None:
    """``Reject(requeue=True)`` sends the task back; its next delivery reads as redelivered
    (``delivery_info["redelivered"]``), as Celery's broker marks it (Celery's own suite)."""
    assert proj.reject_once.delay().get(timeout=WAIT) == "second-pass"


def test_a_task_claimed_ahead_expires_before_it_starts(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Celery checks ``expires`` when a task is about to run, also for one its worker reserved
    ahead: past its expiry it never runs, reads REVOKED and ``get`` raises
    ``TaskRevokedError`` (Celery's t/integration ``test_tasks.py::test_expired``, which the
    real Celery on Redis passes). A prefork worker with one process claims ahead
    (``worker_prefetch_multiplier``, 4 by default): the task is claimed behind two sleeping
    tasks before its expiry, and reached after it."""
    ledger, options = tmp_path / "ledger", {"pool": "prefork", "concurrency": 1}
    with celery_worker(proj.app, MODULE, pg_url, ledger, monkeypatch, "expiry-w1", **options):
        ready = proj.app.control.inspect().ping
        wait_for(lambda: "celery@expiry-w1" in (ready() or {}), timeout=60, what="the worker")
        busy = [proj.sleeping.delay(1.5) for _ in range(2)]
        late = proj.loud.apply_async(("claimed-ahead",), expires=1)
        with pytest.raises(TaskRevokedError):
            late.get(timeout=WAIT)
        assert [b.get(timeout=WAIT) for b in busy] == [1.5, 1.5]
        assert (late.state, late.ready(), late.failed()) == ("REVOKED", True, False)
        assert "loud claimed-ahead" not in (ledger.read_text() if ledger.exists() else "")


def test_task_ignore_result_setting(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``task_ignore_result=True``: every task of the app ignores its result (Celery sets each
    task's ``ignore_result`` from it): the task runs, ``get()`` is None at once, and read by
    id it stays PENDING; ``ignore_result=False`` on a call still stores it."""
    from tests.compat.apps import ignored_results_app as quiet

    module = "tests.compat.apps.ignored_results_app"
    with celery_worker(quiet.app, module, pg_url, tmp_path / "ledger", monkeypatch, "ignoring-w1") as path:
        ignored = quiet.echo.delay("a")
        kept = quiet.echo.apply_async(("b",), ignore_result=False)
        assert kept.get(timeout=WAIT) == "b"
        wait_for(lambda: "echo a" in path.read_text(), timeout=WAIT, what="the ignored task to run")
        assert ignored.get(timeout=WAIT) is None
        again = quiet.app.AsyncResult(ignored.id)
        assert (again.state, again.result) == ("PENDING", None)


def test_a_revoke_before_the_task_is_sent_is_remembered(ledger: Path) -> None:
    """``app.control.revoke(id)`` for a task not sent yet: Celery's workers keep revoked ids
    (in memory, up to 50,000 for 3 hours by default: Workers, "Revoking tasks"), so the task
    never runs when it arrives; it reads REVOKED and ``get`` raises ``TaskRevokedError``."""
    observe("revoke_before_send", ledger)
    task_id = "revoked-before-" + str(free_port())
    proj.app.control.revoke(task_id)
    with pytest.raises(TaskRevokedError):
        proj.loud.apply_async(("never",), task_id=task_id).get(timeout=WAIT)
