"""Sending to a queue no worker consumes logs one warning per queue per process (issue 17,
item 9), and only when some worker is registered to compare with. In-process workers on
PostgreSQL and SQLite."""

from __future__ import annotations

import logging

import pytest

from pgtasks import App
from tests.support.inprocess import running_worker


def warnings_about(caplog: pytest.LogCaptureFixture, queue: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and f"task sent to queue {queue!r}" in r.getMessage()
    ]


def test_a_queue_no_worker_consumes_is_warned_about_once(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pgtasks")
    app = App("watch", database_url=database_url, poll_interval=0.05)

    @app.task(name="watch.t")
    def t() -> int:
        return 1

    producer = App("watch", database_url=database_url)  # another process's view, before any worker
    producer.enqueue("watch.t", queue="typo")
    assert warnings_about(caplog, "typo") == []  # no worker registered: nothing to compare with
    producer.close()
    with running_worker(app, queues=("default", "other")):
        assert t.delay().get(timeout=30) == 1
        t.apply_async(queue="other")
        for _ in range(3):
            t.apply_async(queue="typo")
        t.map_enqueue([[], []], queue="typo2")
    assert warnings_about(caplog, "typo") == [
        "task sent to queue 'typo', which none of the 1 registered workers consumes (they consume "
        "default, other); it waits until a worker runs with -Q typo"
    ]
    assert len(warnings_about(caplog, "typo2")) == 1
    assert warnings_about(caplog, "default") == warnings_about(caplog, "other") == []
    app.close()
