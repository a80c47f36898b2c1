"""``Task.apply_async`` sends through ``app.send_task``, as Celery's does: libraries that
subclass the app to catch every send (django-celery-outbox's ``OutboxCelery`` keeps the task in
an outbox table, written in the caller's transaction, for its relay to send after commit) and
tests that patch ``app.send_task`` see ``delay()`` and ``apply_async()`` too."""

from __future__ import annotations

from contextlib import closing
from typing import Any
from unittest import mock

from pgtasks.compat import install

install()

from celery import Celery  # noqa: E402
from celery.result import AsyncResult  # noqa: E402


class Outbox(Celery):
    """Keeps each send instead of sending it, and hands back the handle of the class it is
    given, as an outbox library does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kept: list[tuple[str, Any, Any, dict[str, Any]]] = []

    def send_task(self, name: str, args: Any = None, kwargs: Any = None, **options: Any) -> AsyncResult:  # type: ignore[override]
        self.kept.append((name, args, kwargs, options))
        result_cls = options.get("result_cls") or self.AsyncResult
        result: AsyncResult = result_cls(options.get("task_id") or f"kept-{len(self.kept)}")
        return result


def test_delay_apply_async_and_signatures_reach_an_overridden_send_task(sqlite_url: str) -> None:
    with closing(Outbox("outbox", broker=sqlite_url)) as app:

        @app.task(name="outbox.add", queue="sums")
        def add(x: int, y: int) -> int:
            return x + y

        held = add.apply_async((1, 2), countdown=5, task_id="o-1")
        add.delay(3, 4)
        add.s(5, 6).delay()
    assert [(name, args) for name, args, _, _ in app.kept] == [
        ("outbox.add", (1, 2)),
        ("outbox.add", (3, 4)),
        ("outbox.add", (5, 6)),
    ]
    options = app.kept[0][3]
    assert options["task_id"] == "o-1" and options["countdown"] == 5 and options["queue"] == "sums"
    assert options["task_type"] is add and options["result_cls"] == add.AsyncResult
    assert held.id == "o-1"  # the handle send_task gave back


def test_a_patched_send_task_sees_delay_and_the_real_one_sends(sqlite_url: str) -> None:
    with closing(Celery("patched", broker=sqlite_url)) as app:

        @app.task(name="patched.add", ignore_result=True)
        def add(x: int, y: int) -> int:
            return x + y

        with mock.patch.object(app, "send_task") as patched:
            add.delay(1, 1)
        sent = add.apply_async((2, 2), task_id="p-1")  # the app's own send_task: stored, ignored
        assert sent.get(timeout=1) is None and app.AsyncResult("p-1").state == "PENDING"
    patched.assert_called_once()
    assert patched.call_args.args[:3] == ("patched.add", (1, 1), {})
    assert isinstance(sent, AsyncResult) and sent.id == "p-1" and sent.ignored
