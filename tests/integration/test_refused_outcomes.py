"""An outcome the database refuses to store (not a lost connection) ends its task ERROR, once,
with the reason, and the other outcomes of its batch are written (issue 17, item 1): it is not
retried forever and run again after a restart. Real PostgreSQL, which cannot store NUL in text."""

from __future__ import annotations

import json

from pgtasks import App
from pgtasks.sysdb.records import ClaimParams, Outcome, Status
from pgtasks.worker.completer import BatchCompleter


def test_a_refused_outcome_ends_its_task_and_spares_the_batch(pg_url: str) -> None:
    app = App("refused", database_url=pg_url)
    api = app.engine.worker_api
    ids = [app.enqueue("refused.t").id for _ in range(3)]
    claimed = api.claim(ClaimParams("w", app.engine.version(), ("default",), 3))
    tokens = {r.task_id: r.claim_token for r in claimed}
    assert sorted(tokens) == sorted(ids)
    completer = BatchCompleter(api, "w")
    completer.start()
    bad, good = ids[0], ids[1:]
    completer.submit(Outcome(bad, Status.SUCCESS, output='"a\x00b"', claim_token=tokens[bad]))
    for task_id in good:
        completer.submit(Outcome(task_id, Status.SUCCESS, output="1", claim_token=tokens[task_id]))
    assert completer.drain(timeout=30)
    completer.stop(timeout=5)
    record = app.engine.get_task(bad)
    assert record is not None and record.status is Status.ERROR
    error = json.loads(record.error or "{}")
    assert error["type"] == "SerializationError"
    assert (
        f"the outcome of task {bad} (SUCCESS) could not be stored: CharacterNotInRepertoire"
        in error["message"]
    )
    for task_id in good:
        done = app.engine.get_task(task_id)
        assert done is not None and done.status is Status.SUCCESS and done.output == "1"
    app.close()
