"""Celery API entries that real projects hit: ``~sig``, NotRegistered for a task no worker
has, QueueNotFound with ``task_create_missing_queues=False``."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from pgtasks import Client
from pgtasks.compat import install
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for

install()

from celery import chain  # noqa: E402
from celery.exceptions import NotRegistered, QueueNotFound  # noqa: E402
from kombu import Queue  # noqa: E402

from tests.compat.apps import results_app as proj  # noqa: E402


def test_invert_sends_and_waits_and_unknown_tasks_fail_as_not_registered(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with celery_worker(
        proj.app, "tests.compat.apps.results_app", pg_url, tmp_path / "ledger", monkeypatch, "w-gaps"
    ):
        assert ~proj.add.s(2, 3) == 5
        assert ~chain(proj.add.s(1, 2), proj.add.s(10)) == 13
        unknown = proj.app.send_task("no.worker.has.this")
        with pytest.raises(NotRegistered) as caught:
            unknown.get(timeout=60)
        assert isinstance(caught.value, KeyError) and "no.worker.has.this" in str(caught.value)


def test_a_missing_queue_is_refused_when_queues_are_not_created(sqlite_url: str) -> None:
    from celery import Celery

    app = Celery("strict", broker=sqlite_url)
    app.conf.task_queues = [Queue("known")]
    app.conf.task_default_queue = "known"

    @app.task(name="strict.t")
    def t() -> None:
        return None

    assert t.apply_async(queue="typo").state == "PENDING"  # Celery's default: created as needed
    app.conf.task_create_missing_queues = False
    with pytest.raises(QueueNotFound, match="Queue 'typo' missing from task_queues"):
        t.apply_async(queue="typo")
    assert t.apply_async(queue="known").state == "PENDING"
    assert t.delay().state == "PENDING"
    app.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"eta": "tomorrow"}, "eta must be a datetime or an ISO 8601 string, not 'tomorrow'"),
        ({"expires": "soon"}, "expires must be a datetime or an ISO 8601 string, not 'soon'"),
        ({"time_limit": "x"}, "time_limit must be a positive number of seconds, not 'x'"),
        ({"soft_time_limit": -2}, "soft_time_limit must be a positive number of seconds, not -2"),
        ({"time_limit": True}, "time_limit must be a positive number of seconds, not True"),
    ],
    ids=["eta", "expires", "time-limit", "soft-time-limit", "bool"],
)
def test_bad_send_options_are_refused_by_name_and_nothing_is_sent(
    sqlite_url: str, options: dict[str, object], message: str
) -> None:
    from celery import Celery

    app = Celery("checked", broker=sqlite_url)

    @app.task(name="checked.t")
    def t() -> None:
        return None

    with pytest.raises(ValueError, match=re.escape(message)):  # pgtasks' ConfigurationError
        t.apply_async(**options)
    with pytest.raises(ValueError, match=re.escape(message)):
        t.s().set(**options).delay()
    fine = t.apply_async(eta="2030-01-01T00:00:00+00:00", expires="2031-01-01T00:00:00+00:00", time_limit=5)
    client = Client(sqlite_url)
    assert [r.task_id for r in client.list_tasks()] == [fine.id]  # only the good one was sent
    client.close()
    app.close()


def test_inspect_registered_describes_each_worker_as_it_runs(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "tests.compat.apps.results_app"
    with celery_worker(proj.app, module, pg_url, tmp_path / "ledger", monkeypatch, "w-registered"):

        @proj.app.task(name="only.in.this.process")
        def local_only() -> None:
            return None

        wait_for(
            lambda: "celery@w-registered" in (proj.app.control.inspect().ping() or {}),
            timeout=60,
            what="the worker to answer ping",
        )
        registered = proj.app.control.inspect().registered()
        assert registered is not None
        names = registered["celery@w-registered"]
        assert "tests.compat.apps.results_app.add" in names
        assert "only.in.this.process" not in names  # the caller's own task, not the worker's
        assert not any(n.startswith(("celery.", "pgtasks.")) for n in names)
        everything = proj.app.control.inspect().registered(builtins=True)["celery@w-registered"]
        builtins = [n for n in everything if n.startswith("celery.")]
        # (celery.ping is celery.contrib.testing's task: here when another test imported it)
        ours = [n for n in sorted(proj.app.tasks) if n.startswith("celery.") and n != "celery.ping"]
        assert builtins == ours
        assert "celery.chord_unlock" in builtins and sorted(everything) == sorted([*names, *builtins])
        assert everything == sorted(everything)  # one sorted list, as Celery's
        node = "celery@w-registered"
        inspect = proj.app.control.inspect()
        assert all(re.fullmatch(r"\S+ \[name=\S+\]", n) for n in inspect.registered("name")[node])
        stats = inspect.stats()[node]
        assert stats["pool"]["implementation"] == "pgtasks.worker:threads"
        assert stats["pool"]["max-concurrency"] >= 1 and stats["rusage"]["utime"] >= 0
        [queue] = [q for q in inspect.active_queues()[node] if q["name"] == "celery"]
        assert (queue["exchange"]["type"], queue["routing_key"]) == ("direct", "celery")
        assert queue["bindings"] == [] and queue["max_priority"] is None
        conf = inspect.conf()[node]
        assert conf["task_track_started"] is False and conf["timezone"] == "UTC"
        assert "task_default_rate_limit" not in conf and "task_default_rate_limit" in inspect.conf(True)[node]
        with_defaults = inspect.conf(True)[node]  # Celery's defaults, as its jsonify shows them
        assert with_defaults["accept_content"] == ["json"] and with_defaults["broker_pool_limit"] == 10
        assert with_defaults["result_expires"] == "1 day, 0:00:00"
        # an ETA task waits in the database: the worker consuming its queue lists it
        eta = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=5)
        later = proj.add.apply_async((1, 2), {}, eta=eta)
        [waiting] = [s for s in inspect.scheduled()[node] if s["request"]["id"] == later.id]
        assert waiting["priority"] == 6 and waiting["request"]["args"] == [1, 2]
        assert waiting["eta"][:19] == eta.isoformat()[:19] and waiting["request"]["acknowledged"] is False
        assert inspect.query_task(later.id)[node] == {}  # not reserved before it is due, as Celery
        # a running task: its pid, its arguments as values (as reprs when safe)
        release = tmp_path / "release"
        running = proj.block.delay(str(release))
        try:
            wait_for(lambda: bool(inspect.active()[node]), timeout=60, what="the task to run")
            [info] = inspect.active()[node]
            assert (info["id"], info["args"], info["acknowledged"]) == (running.id, [str(release)], True)
            assert isinstance(info["worker_pid"], int) and info["time_start"] > 0
            assert inspect.active(safe=True)[node][0]["args"] == repr([str(release)])
            assert inspect.query_task([running.id, "no-such-id"])[node] == {running.id: ["active", info]}
        finally:
            release.touch()
        assert running.get(timeout=60) == "slept"
        later.revoke()
        assert later.id in inspect.revoked()[node]
        # hello: Celery's mingle answer from every worker but the asking one
        assert inspect.hello(node) == {node: None}
        [(answering, mingle)] = inspect.hello("celery@starting", revoked=["from-the-peer"]).items()
        assert answering == node and set(mingle) == {"revoked", "clock"} and isinstance(mingle["clock"], int)
        assert mingle["revoked"][-2:] == [later.id, "from-the-peer"]  # oldest first; the peer's merged
        merged = proj.add.apply_async((1, 2), task_id="from-the-peer")
        assert merged.state == "REVOKED"  # merged as Celery's workers merge them: never runs
        with pytest.raises(TypeError, match="from_node"):
            inspect.hello(None)  # type: ignore[arg-type]


def test_remote_control_commands_reach_the_workers_and_come_back_with_their_replies(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgtasks.engine.errors import ConfigurationError

    control = proj.app.control
    with celery_worker(
        proj.app, "tests.compat.apps.results_app", pg_url, tmp_path / "ledger", monkeypatch, "w-remote"
    ):
        node = "celery@w-remote"
        wait_for(
            lambda: node in (control.inspect().ping() or {}), timeout=60, what="the worker to answer ping"
        )

        def queues() -> set[str]:
            return {q["name"] for q in (control.inspect().active_queues() or {}).get(node, [])}

        assert control.add_consumer("extra", reply=True, timeout=30) == [{node: {"ok": "add consumer extra"}}]
        assert "extra" in queues()
        assert proj.add.apply_async((20, 22), queue="extra").get(timeout=60) == 42
        assert control.cancel_consumer("extra", destination=[node], reply=True, timeout=30) == [
            {node: {"ok": "no longer consuming from extra"}}
        ]
        assert "extra" not in queues()
        # a threads pool keeps its size (prefork's grow and shrink: tests/acceptance/test_flower_api.py)
        grown = control.pool_grow(2, reply=True, timeout=30)
        assert grown == [
            {node: {"error": "ValueError('the threads pool keeps the size it starts with (-c)')"}}
        ]
        assert control.pool_shrink(reply=True, timeout=30)[0][node]["error"].startswith("ValueError(")
        assert control.autoscale(4, 1, reply=True, timeout=30) == [
            {node: {"error": "ValueError('Autoscale not enabled')"}}
        ]
        assert control.enable_events(reply=True, timeout=30) == [
            {node: {"ok": "task events already enabled"}}
        ]
        assert "cannot be disabled" in control.disable_events(reply=True, timeout=30)[0][node]["error"]
        assert control.broadcast("no_such_command", reply=True, timeout=30) == [
            {node: {"error": "unknown command 'no_such_command'"}}
        ]
        seen: list[dict[str, object]] = []
        assert control.broadcast(
            "heartbeat", pattern="celery@w-*", reply=True, timeout=30, callback=seen.append
        ) == [{node: {"ok": "heartbeat"}}]
        assert seen == [{node: {"ok": "heartbeat"}}]
        assert control.broadcast("heartbeat", pattern="celery@other-*", reply=True) == []
        assert control.broadcast("heartbeat", destination=["celery@nobody"], reply=True) == []
        with pytest.raises(ConfigurationError, match="matcher must be one of glob, pcre, not 'regex'"):
            control.broadcast("heartbeat", pattern="x", matcher="regex")
        with pytest.raises(NotImplementedError, match="hold no elections"):
            control.election("id", "topic")
        assert control.shutdown() is None  # no reply asked: the command is sent all the same
        wait_for(lambda: node not in (control.inspect().ping() or {}), timeout=60, what="the worker to stop")
