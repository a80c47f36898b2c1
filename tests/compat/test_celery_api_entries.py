"""The rest of Celery's public API of ``celery.app.task.Task``, ``celery.result`` and
``celery.canvas``, entry by entry (docs/celery-migration.md, "API reference"): each works as
Celery documents it, or raises NotImplementedError naming what to use instead."""

from __future__ import annotations

import io

import pytest

from pgtasks.compat import install

install()

from celery import Celery, chain, chord, group  # noqa: E402
from celery.app.task import Context  # noqa: E402
from celery.canvas import Signature  # noqa: E402
from celery.result import AsyncResult, EagerResult, ResultSet  # noqa: E402


@pytest.fixture
def app(sqlite_url: str) -> Celery:
    celery = Celery("entries", broker=sqlite_url)
    celery.conf.task_always_eager = True
    return celery


def test_task_request_stack_and_signature_from_request(app: Celery) -> None:
    @app.task(bind=True, name="e.who")
    def who(self: object, x: int) -> str:
        return f"{self.request.id}:{x}"  # type: ignore[attr-defined]

    who.push_request(id="pushed-id", args=(7,), kwargs={}, retries=2)
    try:
        assert who.run(7) == "pushed-id:7"  # unit tests of bound tasks do this
        assert who.request_stack.top is not None and len(who.request_stack) == 1
        again = who.signature_from_request()
        assert again.args == (7,) and again.options["task_id"] == "pushed-id"
        assert who.subtask_from_request(queue="other").options["queue"] == "other"
    finally:
        who.pop_request()
    assert who.request_stack.top is None and who.request.id is None
    assert who.shadow_name((1,), {}, {}) is None and who.throws == ()
    assert who.backend is app.backend
    with pytest.raises(ValueError, match="Current task is not member of any chord"):
        who.add_to_chord(who.s(1))
    with pytest.raises(NotImplementedError, match="lazy=True"):
        who.add_to_chord(who.s(1), lazy=True)


def test_context_mapping_clear_and_execution_options() -> None:
    request = Context({"id": "a", "retries": 1}, hostname="h")
    assert (request.id, request.retries, request.hostname) == ("a", 1, "h")
    options = request.as_execution_options()
    assert options["task_id"] == "a" and options["retries"] == 1
    request.clear()
    assert request.id is None and request.kwargs == {} and request.children == []


def test_signature_entries(app: Celery) -> None:
    @app.task(name="e.add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="e.handle")
    def handle(task_id: str) -> None:
        return None

    sig = add.s(2, 2)
    assert sig.on_error(handle.s()) is sig and sig.options["link_error"][0]["task"] == "e.handle"
    assert sig.replace(args=(5, 5)).args == (5, 5) and sig.args == (2, 2)
    sig.link(add.s(10))
    assert [s.name for s in sig.flatten_links()] == ["e.add", "e.add"]
    assert add.s(1).reprcall(2, z=3) == "e.add(2, 1, z=3)"
    sig.append_to_list_option("headers_seen", "a")
    sig.append_to_list_option("headers_seen", "a")
    sig.extend_list_option("headers_seen", ["b", "c"])
    assert sig.options["headers_seen"] == ["a", "b", "c"]
    back = Signature.from_dict(dict(add.s(3, 4).set(parent_id="p", root_id="r")))
    assert back.args == (3, 4) and back.parent_id == "p" and back.root_id == "r"
    assert back.AsyncResult == app.AsyncResult and back.apply_async().get() == 7

    @Signature.register_type(name="custom_sig")
    class Custom(Signature):
        pass

    assert Signature.TYPES["custom_sig"] is Custom
    assert sig.stamp(color="blue").options["stamped_headers"] == ["color"]
    assert sig.options["color"] == "blue"
    assert [
        m.options["countdown"] for m in group(add.s(i, i) for i in range(3)).skew(start=1, step=2).tasks
    ] == [
        1,
        3,
        5,
    ]
    pieces = chain(add.s(1, 1), add.s(2)).unchain_tasks()
    assert [p.name for p in pieces] == ["e.add", "e.add"]
    # As Celery: a chord's header given as a list holds copies, a group is kept as it is.
    member = add.si(1, 1)
    listed = chord([member], add.s(0))
    for task in listed.tasks:
        task.link_error(handle.si("x"))
    assert listed.tasks[0] is not member and member == add.si(1, 1)
    assert chord(group([member]), add.s(0)).tasks[0] is member


def test_result_entries(app: Celery) -> None:
    @app.task(name="e.double")
    def double(x: int) -> int:
        return 2 * x

    @app.task(name="e.boom")
    def boom() -> None:
        raise LookupError("boom")

    ok = double.delay(4)
    assert isinstance(ok, EagerResult) and ok.maybe_throw() == 8 and ok.get_leaf() == 8
    assert ok.as_list() == [ok.id] and ok.supports_native_join
    assert ok in ok.build_graph() and ok.graph.topsort() == [ok]
    out = io.StringIO()
    ok.graph.to_dot(out)
    assert out.getvalue().startswith("digraph")
    failed = boom.delay()
    with pytest.raises(LookupError, match="boom"):
        failed.maybe_throw()
    seen: list[object] = []
    assert isinstance(
        failed.maybe_reraise(propagate=False, callback=lambda i, v: seen.append(i)), LookupError
    )
    assert seen == [failed.id]
    with pytest.raises(ValueError, match="thrown"):
        ok.throw(ValueError("thrown"))
    assert AsyncResult.TimeoutError.__name__ == "TimeoutError"
    with pytest.raises(TypeError, match="a dict of header names"):
        ok.revoke_by_stamped_headers(["color"])

    results = ResultSet([double.delay(1)], app=app)
    results.update([double.delay(2), results.results[0]])
    assert len(results) == 2 and results.join_native() == [2, 4]
    assert [meta["result"] for _, meta in results.iter_native()] == [2, 4]
    results.discard(results.results[0].id)
    results.discard("not-there")
    with pytest.raises(KeyError):
        results.remove("not-there")
    results.maybe_throw()
    results.add(failed)
    with pytest.raises(LookupError):
        results.maybe_throw()
    # Eager results are ready: then() calls back at once, with the result (set) itself.
    called: list[object] = []
    assert results.then(called.append).ready and called == [results]
    assert ok.then(lambda r: r.get() + 1).value == (9,)
    assert results.backend is app.backend
    results.clear()
    assert len(results) == 0


def test_a_chains_send_options_go_to_its_first_task(sqlite_url: str) -> None:
    """As Celery sends a chain: ``chain(...).apply_async(headers=..., countdown=...)`` gives
    those options to the first task (the one that runs first); the others wait for it."""
    import json

    app = Celery("chain-options", broker=sqlite_url)

    @app.task(name="c.add")
    def add(x: int, y: int) -> int:
        return x + y

    last = chain(add.s(1, 1), add.s(2)).apply_async(headers={"tenant": "acme"}, countdown=600)
    first = app.engine.get_task(last.parent.id)
    assert first is not None and first.status.value == "DELAYED"
    assert json.loads(first.meta or "{}")["headers"] == {"tenant": "acme"}
    second = app.engine.get_task(last.id)
    assert second is not None and second.status.value == "WAITING"
    app.close()
