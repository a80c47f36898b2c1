"""The outcome writer asks, before it takes a batch, whether the worker drains a backlog
without carrying outcomes in its claims (prefork): the outcomes gathered meanwhile then share
one statement."""

from __future__ import annotations

import threading
from typing import Any

from pgtasks import App
from pgtasks.engine.worker_api import WorkerApi
from pgtasks.sysdb.records import ClaimParams, CompleteParams, Outcome, Status
from pgtasks.worker.completer import BatchCompleter


class _CountingApi:
    """The real worker API, counting the outcome statements it is asked to send."""

    def __init__(self, api: WorkerApi) -> None:
        self._api = api
        self.batches: list[int] = []

    def complete(self, params: CompleteParams) -> list[str]:
        self.batches.append(len(params.outcomes))
        return self._api.complete(params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)


def test_outcomes_of_a_backlog_share_one_statement(sqlite_url: str) -> None:
    app = App("gather", database_url=sqlite_url)
    api = _CountingApi(app.engine.worker_api)
    for _ in range(5):
        app.enqueue("gather.t")
    claimed = api.claim(ClaimParams("w", app.engine.version(), ("default",), 5))
    assert len(claimed) == 5
    submitted = threading.Event()

    def backlog() -> bool:  # asked once the first outcome wakes the writer
        return submitted.wait(30)

    completer = BatchCompleter(api, "w")  # type: ignore[arg-type]
    completer.gathers_while(backlog)
    completer.start()
    for record in claimed:
        completer.submit(Outcome(record.task_id, Status.SUCCESS, output="1", claim_token=record.claim_token))
    submitted.set()
    assert completer.drain(timeout=30)
    completer.stop(timeout=5)
    assert api.batches == [5]
    assert all(app.engine.get_task(r.task_id).status is Status.SUCCESS for r in claimed)  # type: ignore[union-attr]
    app.close()
