"""The lease keeper after an outage (issue 18): every executor's heartbeat is old then, so a
worker that went D seconds without renewing its own waits D plus a lease before it recovers the
tasks of other executors, which are reconnecting too. Without such a gap it recovers as usual."""

from __future__ import annotations

import time

from pgtasks import App
from pgtasks.sysdb.records import ExecutorInfo, Status
from pgtasks.worker.lease import LeaseKeeper
from tests.integration.sysdb.support import claim, new
from tests.support.inprocess import wait_for


def test_recovery_of_others_waits_out_an_outage(database_url: str) -> None:
    app = App("lease-outage", database_url=database_url)
    store, sysdb = app.engine.worker_api, app.engine.database.sysdb
    sysdb.executor_register(ExecutorInfo("quiet", "host", 1, "v1", ("default",), lease_ms=1))
    sysdb.tasks_enqueue([new("held"), new("later")])
    claim(sysdb, executor="quiet", limit=2)
    beat = max(e.last_heartbeat for e in sysdb.executors_list())
    wait_for(lambda: sysdb.now_ms() > beat + 1, what="the quiet executor's lease to expire")
    me = ExecutorInfo("me", "host", 2, "v1", ("default",), lease_ms=1000)
    store.register_executor(me)
    keeper = LeaseKeeper(store, me, lease_seconds=1.0)

    keeper.beat_at = time.monotonic() - 100  # its last renewal, 100 s ago: an outage
    keeper.tick()
    held = sysdb.task_get("held")
    assert held is not None and held.status is Status.PENDING  # not taken: the others reconnect

    fresh = LeaseKeeper(store, me, lease_seconds=1.0)  # no gap: recovery as usual
    fresh.tick()
    for task_id in ("held", "later"):
        record = sysdb.task_get(task_id)
        assert record is not None and record.status is Status.ENQUEUED
    app.close()
