"""Celery's ``celery.contrib.testing.mocks``, which projects' unit tests import to build a task
message (TaskMessage, task_message_from_sig) or a context-manager mock (ContextMock): the
messages are those Celery 5.5 builds (compared field by field with the real one). pgtasks
refused the module: every name raised NotImplementedError."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pgtasks.compat.celery import Celery
from pgtasks.compat.celery.contrib.testing.mocks import (
    ContextMock,
    TaskMessage,
    TaskMessage1,
    task_message_from_sig,
)


def test_task_messages_of_both_protocols() -> None:
    message = TaskMessage("proj.add", id="i1", args=[1, 2], kwargs={"z": 3}, retries=2)
    assert message.headers == {"id": "i1", "task": "proj.add", "shadow": None, "retries": 2}
    embed = {"callbacks": None, "errbacks": None, "chain": None}
    assert message.payload == ([1, 2], {"z": 3}, embed)
    assert json.loads(message.body) == [[1, 2], {"z": 3}, embed]
    assert (message.content_type, message.content_encoding) == ("application/json", "utf-8")
    old = TaskMessage1("proj.add", id="i2", args=[1], countdown=3)
    assert old.headers == {} and old.payload == {
        "task": "proj.add",
        "id": "i2",
        "args": [1],
        "kwargs": {},
        "callbacks": None,
        "errbacks": None,
        "countdown": 3,
    }
    assert len(TaskMessage("proj.add").headers["id"]) == 36  # a fresh id when none is given


def test_a_message_from_a_signature(tmp_path: Path) -> None:
    app = Celery("mocks", broker=f"sqlite:///{tmp_path / 'm.sqlite3'}", set_as_current=False)

    @app.task(name="mocks.add")
    def add(x: int, y: int) -> int:
        return x + y

    expires = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    sig = add.s(1, 2).set(expires=expires, queue="q", priority=3)
    sig.link(add.s(5))
    sig.link_error(add.si(0, 0))
    message = task_message_from_sig(app, sig)
    assert message.headers["task"] == "mocks.add" and message.headers["id"] == sig.id
    assert message.headers["expires"] == "2030-01-01T00:00:00+00:00" and message.headers["eta"] is None
    assert (message.headers["queue"], message.headers["priority"], "utc" in message.headers) == (
        "q",
        3,
        False,
    )
    args, kwargs, embed = message.payload
    assert (args, kwargs) == ((1, 2), {})
    assert [s["task"] for s in embed["callbacks"]] == ["mocks.add"] and embed["errbacks"][0]["args"] == (0, 0)
    later = task_message_from_sig(app, add.s(1, 2).set(countdown=10, expires=30))
    eta, expiry = (dt.datetime.fromisoformat(later.headers[k]) for k in ("eta", "expires"))
    assert dt.timedelta(seconds=19) < expiry - eta < dt.timedelta(seconds=21)  # app.now() read twice
    app.close()


def test_context_mock_records_the_block_and_lets_errors_through() -> None:
    mock = ContextMock()
    with mock as entered:
        pass
    assert entered is mock and (mock.__enter__.call_count, mock.__exit__.call_count) == (1, 1)
    with pytest.raises(KeyError), ContextMock():
        raise KeyError("k")
