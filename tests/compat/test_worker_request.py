"""The request of ``task_received`` is Celery's worker ``Request``: beside what the task's own
request has, its name, and the message's embed with the linked signatures as the sender
stamped them (``_payload``, the private ``_Request__payload`` that Celery's own integration
suite reads, and ``errbacks``): as in Celery 5.7 (t/integration/test_canvas.py's
``test_linking_stamped_sig`` and ``test_err_linking_stamped_sig``)."""

from __future__ import annotations

from typing import Any

import pytest
from celery import Celery
from celery.canvas import Signature, StampingVisitor
from celery.contrib.testing.worker import start_worker
from celery.signals import task_received

from tests.support.inprocess import wait_for


class MonitoringId(StampingVisitor):
    def __init__(self, value: str) -> None:
        self.value = value

    def on_signature(self, sig: Signature, **headers: Any) -> dict[str, Any]:
        return {"mtask_id": self.value}


def test_task_received_carries_the_embed_with_the_stamped_links(sqlite_url: str) -> None:
    app = Celery("worker-request", broker=sqlite_url)
    heard: dict[str, Any] = {}

    @app.task(name="wr.identity")
    def identity(x: Any) -> Any:
        return x

    @app.task(name="wr.on_error")
    def on_error(task_id: str) -> None:
        return None

    def on_received(sender: Any = None, request: Any = None, **kwargs: Any) -> None:
        heard.setdefault(request.id, request)

    sig = identity.si("passing")
    sig.stamp(visitor=MonitoringId("first"))
    sig.link(identity.si("linked"))
    sig.link_error(on_error.s())
    sig.stamp(visitor=MonitoringId("1234"))
    task_received.connect(on_received, weak=False)
    try:
        with start_worker(app, perform_ping_check=False):
            result = sig.apply_async()
            assert result.get(timeout=60) == "passing"
            wait_for(lambda: result.id in heard, timeout=30, what="task_received")
    finally:
        task_received.disconnect(on_received)
        app.close()
    request = heard[result.id]
    args, kwargs, embed = request._Request__payload
    assert (args, kwargs) == (("passing",), {}) and request._payload is request._Request__payload
    assert (request.name, request.task_name, request.task_id) == ("wr.identity", "wr.identity", result.id)
    assert embed["chain"] is None and embed["chord"] is None
    [link] = embed["callbacks"]
    [errback] = request.errbacks
    assert embed["errbacks"] == [errback]
    assert (link["task"], link["args"], errback["task"]) == ("wr.identity", ["linked"], "wr.on_error")
    for linked in (link, errback):  # stamped after linking: the stamp reached the links too
        assert linked["options"]["mtask_id"] == "1234"
        assert all(h in linked["options"] for h in linked["options"]["stamped_headers"])
    assert request.stamps["mtask_id"] == "1234" and request.mtask_id == "1234"  # the task's own
    assert request.request_dict["task"] == "wr.identity" and request.request_dict["id"] == result.id


def test_a_task_without_links_has_an_empty_embed(sqlite_url: str) -> None:
    app = Celery("worker-request-plain", broker=sqlite_url)
    heard: list[Any] = []

    @app.task(name="wr.plain")
    def plain() -> int:
        return 1

    def on_received(sender: Any = None, request: Any = None, **kwargs: Any) -> None:
        heard.append(request)

    task_received.connect(on_received, weak=False)
    try:
        with start_worker(app, perform_ping_check=False):
            assert plain.delay().get(timeout=60) == 1
            wait_for(lambda: bool(heard), timeout=30, what="task_received")
    finally:
        task_received.disconnect(on_received)
        app.close()
    [request] = heard
    assert request._payload == ((), {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None})
    assert request.errbacks is None
    with pytest.raises(AttributeError):
        request.no_such_field  # noqa: B018
